package lifecycle

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"

	"warrant/internal/ahead"
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
	byKey  map[spareKey]*ahead.One[*actionCgroup]
	closed bool
	bg     sync.WaitGroup // removals in flight
}

// spareKey is what a spare is made for: the limits its knobs carry.
type spareKey struct{ memory, pids uint64 }

func newSpares() *spares {
	return &spares{byKey: map[spareKey]*ahead.One[*actionCgroup]{}}
}

// ahead is the spare made ahead for lim, or nil once quiesce has begun.
func (c *Cgroups) ahead(lim profile.Limits) *ahead.One[*actionCgroup] {
	s, key := c.sp, spareKey{lim.Memory, lim.Pids}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	o := s.byKey[key]
	if o == nil {
		o = ahead.New(func() (*actionCgroup, error) {
			sp := &actionCgroup{fd: -1}
			if err := c.createV1(sp, randomName("spare-"), lim); err != nil {
				sp.remove()
				return nil, err
			}
			return sp, nil
		}, (*actionCgroup).remove)
		s.byKey[key] = o
	}
	return o
}

// takeSpare gives a the v1 directories of the spare made for lim,
// renamed to id, and makes the next spare for lim in the background. It
// returns false when there was none, or a rename failed (the spare is
// then removed): the caller makes them itself.
func (c *Cgroups) takeSpare(a *actionCgroup, id string, lim profile.Limits) bool {
	o := c.ahead(lim)
	if o == nil {
		return false
	}
	defer o.Refill()
	sp, ok := o.Take()
	if !ok {
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
	made := make([]*ahead.One[*actionCgroup], 0, len(s.byKey))
	for _, o := range s.byKey {
		made = append(made, o)
	}
	s.mu.Unlock()
	for _, o := range made {
		o.Close()
	}
	s.bg.Wait()
}
