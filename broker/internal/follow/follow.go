package follow

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"warrant/internal/profile"
	"warrant/wire"
)

// The bounds (see the package doc).
const (
	Window    = 512 << 10 // one stream's bytes kept in memory
	MaxMemory = 16 << 20  // all streams' windows together
	HoldBytes = 64 << 20  // one stream's bytes held for its first follower
	// Resume is how many bytes before a follower's offset are kept for
	// it: what it was sent but may not have printed when it was cut off
	// (a unix socket's buffer, 208 KiB by default, and one frame). It is
	// under Window, so that a follower that keeps up spills nothing.
	Resume = 384 << 10
	// Linger is how long an ended action's hold stays for a first
	// follower; ParkLinger how long the bytes a follower that left before
	// the end did not take stay for it.
	Linger     = 30 * time.Second
	ParkLinger = 10 * time.Minute
	maxParked  = 16 // parked claims per action; the oldest goes first
)

// MaxSpill bounds one stream's spill file: the longest profile's hard
// output budget, past which the runner ends the group anyway.
var MaxSpill = uint64(profile.Of(wire.ProfileLong).HardOutput)

// Done is a follower's offset on a stream it does not follow.
const Done = math.MaxUint64

// Part is what a follower is sent next of one stream: Data, the
// stream's bytes from Offset, or a gap of NotStreamed bytes from Offset
// that no one holds any more.
type Part struct {
	Stream      wire.OutputStream
	Offset      uint64
	Data        []byte
	NotStreamed uint64
}

// Hub is the fan-out of every action's output. The zero value is not
// usable; call New. It is safe for concurrent use.
type Hub struct {
	now   func() time.Time
	after func(time.Duration, func()) // time.AfterFunc, for the sweeps after an end

	// the bounds, the package's constants but in tests
	window, hold, resume, maxSpill uint64
	maxMemory                      int64
	memory                         atomic.Int64 // bytes of windows, all actions together

	mu      sync.Mutex // held before any action's mu, never after
	dir     string     // where spills go; "": nothing is spilled
	closed  bool
	actions map[string]*action
}

// New returns an empty hub that spills nothing until SpillTo.
func New() *Hub {
	return &Hub{now: time.Now, after: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		window: Window, hold: HoldBytes, resume: Resume, maxSpill: MaxSpill, maxMemory: MaxMemory, actions: map[string]*action{}}
}

// SpillTo makes dir, a directory only the broker uses, the place of the
// spills, first removing what a previous broker left there: an action's
// spill never outlives its broker.
func (h *Hub) SpillTo(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	h.mu.Lock()
	h.dir = dir
	h.mu.Unlock()
	return nil
}

// Close removes every spill; nothing is held or spilled from then on.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for k, a := range h.actions {
		a.mu.Lock()
		h.remove(k, a)
		for sub := range a.subs {
			sub.signal()
		}
		a.mu.Unlock()
	}
}

// Publish hands the redacted output p of one stream of handle to its
// followers. It never waits for one: what a follower has not taken yet
// stays in the stream's window, and what leaves the window while someone
// still needs it goes to the spill. The caller's slice is only lent.
func (h *Hub) Publish(handle string, s wire.OutputStream, p []byte) {
	if len(p) == 0 {
		return
	}
	a := h.lock(handle, true)
	if a == nil {
		return
	}
	defer a.mu.Unlock()
	a.write(int(s)-1, p)
	for sub := range a.subs {
		sub.signal()
	}
}

// End marks handle's action ended: its followers are told once they have
// taken everything. Its hold goes after Linger, its parked claims after
// ParkLinger. End is idempotent, and a no-op for a handle the hub does
// not know.
func (h *Hub) End(handle string) {
	h.mu.Lock()
	a, ok := h.actions[handle]
	h.mu.Unlock()
	if !ok {
		return
	}
	a.mu.Lock()
	first := a.ended.IsZero() && !a.removed
	if first {
		a.ended = h.now()
		a.settle()
		for sub := range a.subs {
			sub.signal()
		}
	}
	a.mu.Unlock()
	if first {
		h.after(Linger+time.Second, h.sweep)
		h.after(ParkLinger+time.Second, h.sweep)
		h.sweep()
	}
}

// Subscribe starts following handle from the offsets from (Done for a
// stream not followed): the returned Sub is sent the stream's bytes
// from there, and gaps for those no one holds. A parked claim at or
// after from on a stream is taken over (a follower resuming where it
// left, or one that wants more). The caller must Close it; it must also
// make sure End is called once the action is over (the broker does when
// it records the end; a follower that finds the action already over
// calls End itself).
func (h *Hub) Subscribe(handle string, from [2]uint64) *Sub {
	sub := &Sub{h: h, handle: handle, at: from, from: from, room: [2]uint64{Done, Done}, wake: make(chan struct{}, 1)}
	a := h.lock(handle, false)
	if a == nil { // closed: an ended action with nothing
		sub.a = &action{ended: h.now(), subs: map[*Sub]struct{}{}}
		return sub
	}
	defer a.mu.Unlock()
	sub.a = a
	a.subs[sub] = struct{}{} // first: what it takes over stays spilled
	for _, c := range a.parked {
		for s := range c.at {
			if from[s] <= c.at[s] {
				c.at[s] = Done
			}
		}
	}
	a.dropParked(func(c *claim) bool { return c.at == [2]uint64{Done, Done} })
	sub.signal()
	return sub
}

// lock returns handle's entry, locked, creating it (with a hold when
// made by Publish); nil once the hub is closed.
func (h *Hub) lock(handle string, publish bool) *action {
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil
		}
		a, ok := h.actions[handle]
		if !ok {
			a = &action{h: h, subs: map[*Sub]struct{}{}}
			if h.dir != "" && handle != "" && !strings.ContainsAny(handle, `/\`) && filepath.IsLocal(handle) {
				a.dir = filepath.Join(h.dir, handle)
			}
			for s := range a.streams {
				a.streams[s].spill = spill{max: h.maxSpill}
				if a.dir != "" {
					a.streams[s].spill.path = filepath.Join(a.dir, wire.OutputStream(s+1).String())
				}
			}
			if publish {
				a.parked = []*claim{{limit: h.hold}}
			}
			h.actions[handle] = a
		}
		h.mu.Unlock()
		a.mu.Lock()
		if !a.removed {
			return a
		}
		a.mu.Unlock()
	}
}

// sweep drops the holds and parked claims of actions ended long enough
// ago, and removes every entry that holds nothing for anyone.
func (h *Hub) sweep() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	for k, a := range h.actions {
		a.mu.Lock()
		if !a.ended.IsZero() {
			a.dropParked(func(c *claim) bool {
				return now.Sub(a.ended) >= ParkLinger || (c.limit != Done && now.Sub(a.ended) >= Linger)
			})
			a.settle()
		}
		if a.idle() {
			h.remove(k, a)
		}
		a.mu.Unlock()
	}
}

// remove deletes a's entry and its spill. h.mu and a.mu are held.
func (h *Hub) remove(handle string, a *action) {
	a.removed = true
	for s := range a.streams {
		st := &a.streams[s]
		st.spill.close()
		h.memory.Add(-int64(len(st.ring)))
		st.ring, st.memFrom = nil, st.total // a follower still here is sent a gap
	}
	if a.dir != "" {
		os.RemoveAll(a.dir)
	}
	delete(h.actions, handle)
}
