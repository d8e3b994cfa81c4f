package lifecycle

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"

	"warrant/internal/profile"
)

// spares takes two costs off an action's path. Making a cgroup v1 memory
// and pids directory and writing its limits costs more than the rest of
// an action's cgroup work (BenchmarkCgroupFiles), and so does removing
// them. So, for each pair of limits an action has used, one set of v1
// directories is made ahead, in the background, named spare-<random>,
// with its limits set; the next action with those limits takes it by
// renaming it to its handle (cgroup v1 allows a rename within its parent;
// cgroup v2 allows none, so an action's v2 directory is always made for
// it). And an action's directories are removed in the background once it
// has ended and its counters were read. Nothing ever runs in a spare: a
// broker that dies leaves it empty, and the next one removes it with the
// other empty leftovers (EndLeftovers). Remove waits for both kinds of
// background work, and removes the spares.
type spares struct {
	mu     sync.Mutex
	ready  map[spareKey]*actionCgroup
	making map[spareKey]bool
	closed bool
	bg     sync.WaitGroup // refills and removals in flight
}

// spareKey is what a spare is made for: the limits its knobs carry.
type spareKey struct{ memory, pids uint64 }

func newSpares() *spares {
	return &spares{ready: map[spareKey]*actionCgroup{}, making: map[spareKey]bool{}}
}

// takeSpare gives a the v1 directories of the spare made for lim,
// renamed to id, and makes the next spare for lim in the background. It
// returns false when there was none, or a rename failed (the spare is
// then removed): the caller makes them itself.
func (c *Cgroups) takeSpare(a *actionCgroup, id string, lim profile.Limits) bool {
	s, key := c.sp, spareKey{lim.Memory, lim.Pids}
	defer c.refill(lim)
	s.mu.Lock()
	sp := s.ready[key]
	delete(s.ready, key)
	s.mu.Unlock()
	if sp == nil {
		return false
	}
	for _, p := range []struct {
		from string
		to   *string
	}{{sp.mem, &a.mem}, {sp.pids, &a.pids}} {
		if p.from == "" {
			continue
		}
		dst := filepath.Join(filepath.Dir(p.from), id)
		if err := os.Rename(p.from, dst); err != nil {
			sp.remove() // what is left of it under its own name
			for _, d := range []string{a.mem, a.pids} {
				if d != "" {
					os.Remove(d)
				}
			}
			a.mem, a.pids = "", ""
			return false
		}
		*p.to = dst
	}
	return true
}

// refill makes the spare for lim in the background, unless one is ready
// or being made, or Remove has begun.
func (c *Cgroups) refill(lim profile.Limits) {
	s, key := c.sp, spareKey{lim.Memory, lim.Pids}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ready[key] != nil || s.making[key] {
		return
	}
	s.making[key] = true
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		sp := &actionCgroup{fd: -1}
		err := c.createV1(sp, randomName("spare-"), lim)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.making[key] = false
		if err != nil || s.closed {
			sp.remove()
			return
		}
		s.ready[key] = sp
	}()
}

// randomName is prefix and 16 random hex digits: the name of a cgroup
// directory that is no action's.
func randomName(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// release removes an ended action's directories in the background.
func (c *Cgroups) release(a *actionCgroup) {
	c.sp.bg.Add(1)
	go func() {
		defer c.sp.bg.Done()
		a.remove()
	}()
}

// quiesce stops refills, waits for the background work in flight and
// removes the spares.
func (c *Cgroups) quiesce() {
	s := c.sp
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.bg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, sp := range s.ready {
		sp.remove()
		delete(s.ready, k)
	}
}
