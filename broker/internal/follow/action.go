package follow

import (
	"slices"
	"sync"
	"time"
)

// action is one action's output: per stream, its bytes [memFrom, total)
// in a window of memory, and those a claim still needs that left the
// window in the spill.
type action struct {
	h       *Hub
	dir     string // its spill directory; "": none
	mu      sync.Mutex
	streams [2]stream
	subs    map[*Sub]struct{}
	parked  []*claim // followers that left before the end, and the hold
	ended   time.Time
	removed bool
}

type stream struct {
	total, memFrom uint64
	ring           []byte // the window: offset o at ring[o%len]; grown as needed (grow)
	spill          spill
}

// firstRing is a window's first size: most actions print less.
const firstRing = 64 << 10

// claim is what someone still needs of an action: each stream's bytes
// from its offset at (Done: none) — and the resume bytes before it, down
// to floor, which it was sent but may not have printed — up to limit. A
// follower's claim runs to the end; the hold, a claim for the first
// follower, to the hub's hold bound.
type claim struct {
	at, floor [2]uint64
	limit     uint64
	resume    uint64
}

// wants reports whether c needs a byte of [from, to) of stream s.
func (c *claim) wants(s int, from, to uint64) bool {
	if c.at[s] == Done {
		return false
	}
	first := max(c.floor[s], c.at[s]-min(c.at[s], c.resume))
	return max(from, first) < min(to, c.limit)
}

// wanted reports whether a claim needs a byte of [from, to) of stream s.
func (a *action) wanted(s int, from, to uint64) bool {
	for sub := range a.subs {
		if sub.claim().wants(s, from, to) {
			return true
		}
	}
	for _, c := range a.parked {
		if c.wants(s, from, to) {
			return true
		}
	}
	return false
}

// write appends p to stream s: room is made in the window by evicting
// its oldest bytes, and what of p does not fit goes by the spill too;
// an evicted byte is spilled only if a claim needs it. Bytes no claim
// needs are not even copied.
func (a *action) write(s int, p []byte) {
	st := &a.streams[s]
	n := uint64(len(p))
	end := st.total + n
	if !a.wanted(s, st.total, end) {
		a.evict(s, st.total-st.memFrom)
		st.total, st.memFrom = end, end
		return
	}
	c := a.grow(s, st.total-st.memFrom+n)
	if n >= c {
		a.evict(s, st.total-st.memFrom)
		k := n - c
		a.spillOut(s, st.total, p[:k])
		st.total += k
		st.memFrom = st.total
		p = p[k:]
	} else if held := st.total - st.memFrom; held+n > c {
		a.evict(s, held+n-c)
	}
	for len(p) > 0 {
		k := copy(st.ring[st.total%c:], p)
		p = p[k:]
		st.total += uint64(k)
	}
}

// grow makes stream s's window hold need bytes if it can, and returns
// its size: it starts at firstRing and doubles up to the hub's window,
// within the hub's memory bound (past which it stays as it is, and what
// does not fit goes by the spill).
func (a *action) grow(s int, need uint64) uint64 {
	st := &a.streams[s]
	c := uint64(len(st.ring))
	if need <= c || c >= a.h.window {
		return c
	}
	nc := max(c*2, min(firstRing, a.h.window))
	for nc < need && nc < a.h.window {
		nc *= 2
	}
	nc = min(nc, a.h.window)
	if a.h.memory.Add(int64(nc-c)) > a.h.maxMemory {
		a.h.memory.Add(-int64(nc - c))
		return c
	}
	ring := make([]byte, nc)
	for o := st.memFrom; o < st.total; {
		si, di := o%c, o%nc
		k := min(st.total-o, c-si, nc-di)
		copy(ring[di:di+k], st.ring[si:si+k])
		o += k
	}
	st.ring = ring
	return nc
}

// evict takes the k oldest bytes out of stream s's window.
func (a *action) evict(s int, k uint64) {
	st := &a.streams[s]
	for k > 0 {
		c := uint64(len(st.ring))
		i := st.memFrom % c
		m := min(k, c-i)
		a.spillOut(s, st.memFrom, st.ring[i:i+m])
		st.memFrom += m
		k -= m
	}
}

// spillOut spills data, stream s's bytes from offset from, if a claim
// needs any of them; otherwise (or if the spill refuses them) they are
// gone.
func (a *action) spillOut(s int, from uint64, data []byte) {
	if len(data) > 0 && a.wanted(s, from, from+uint64(len(data))) {
		a.streams[s].spill.write(from, data)
	}
}

// trim lets go of the spilled bytes no claim needs any more.
func (a *action) trim() {
	for s := range a.streams {
		if len(a.streams[s].spill.spans) > 0 {
			a.streams[s].spill.keep(func(from, to uint64) bool { return a.wanted(s, from, to) })
		}
	}
}

// dropParked drops the parked claims for which drop is true, then what
// the spill held only for them.
func (a *action) dropParked(drop func(*claim) bool) {
	if n := len(a.parked); n > 0 {
		if a.parked = slices.DeleteFunc(a.parked, drop); len(a.parked) < n {
			a.trim()
		}
	}
}

// settle lets go, once the action has ended, of the parked claims on
// streams they need nothing more of.
func (a *action) settle() {
	if a.ended.IsZero() {
		return
	}
	for _, c := range a.parked {
		for k := range c.at {
			if !c.wants(k, 0, a.streams[k].total) {
				c.at[k] = Done
			}
		}
	}
	a.dropParked(func(c *claim) bool { return c.at == [2]uint64{Done, Done} })
}

// park keeps what a follower that left before the end still needs.
func (a *action) park(c claim) {
	if c.at == [2]uint64{Done, Done} {
		return
	}
	if len(a.parked) == maxParked {
		a.parked = a.parked[1:]
	}
	a.parked = append(a.parked, &c)
	a.trim()
}

// published reports whether the action printed anything.
func (a *action) published() bool { return a.streams[0].total+a.streams[1].total > 0 }

// idle reports whether the entry holds nothing for anyone: it ended, or
// never printed, and no one follows it or will come back for it.
func (a *action) idle() bool {
	return len(a.subs) == 0 && len(a.parked) == 0 && (!a.ended.IsZero() || !a.published())
}
