//go:build linux || darwin

package lifecycle

import (
	"slices"
	"sync"

	"warrant/internal/ahead"
	"warrant/internal/profile"
	"warrant/wire"
)

// Warm keeps one launcher started ahead of the next action, already in
// that action's cgroups, so that an action waits neither for a process
// and its runtime to start (about half of an action's own time for
// /bin/true, BenchmarkRunTruePhases) nor for its cgroups to be made.
//
// A slot is a launcher and the cgroups it waits in, made for one shape
// (the last action's limits and /etc entries) and named warm-<random>:
// the cgroup v2 directory it was started in (CLONE_INTO_CGROUP) and the
// cgroup v1 directories it was born in (launch), off the action's path.
// A warm launcher has done nothing but what every launcher does before
// its request, and granted the /etc entries of its Prepare (Linux), which
// are the host's, not any action's: it waits to read that request. The
// action that takes the slot (its shape must be the slot's, or the
// launcher would refuse its request; otherwise the slot is discarded and
// the action starts its own, which is sent no Prepare) renames the v1
// directories to its handle and keeps the v2 directory, which cannot be
// renamed, under the slot's name; only then is the launcher's origin
// recorded and its request sent. One that died while it waited is
// reaped and the action starts its own; one killed as the action takes
// it dies under the request, and the action ends known_not_executed
// (nothing ran, and the recorded origin, which is final, is that one's).
//
// Recovery finds a dead broker's action by the name of its cgroups
// (EndLeftovers): a warm launcher is kept only where the action has v1
// directories to carry its handle (warmCosts). A broker that dies leaves
// an untaken slot's launcher with the other end of its request socket
// closed: it reads end of stream, refuses and exits, and the next broker
// ends what is left in a warm- directory without calling it a survivor
// (nothing in one was ever sent a request: a taken slot's v1 directories
// carry the handle, and the handle's processes are ended, and reported,
// first).
//
// A nil *Warm starts every launcher when its action needs it.
type Warm struct {
	path string
	cg   *Cgroups
	one  *ahead.One[*slot]

	mu   sync.Mutex
	next shape // what the next slot is made for: the last action's
}

// shape is what a slot is made for: its cgroups' limits and the /etc
// entries its launcher grants ahead (wire.Prepare; none on macOS).
type shape struct {
	lim     profile.Limits
	entries []wire.PathPin
}

// shapeOf is the shape of spec's action.
func shapeOf(spec *Spec) shape {
	return shape{lim: spec.Limits, entries: prepared(spec.Request)}
}

func (a shape) is(b shape) bool { return a.lim == b.lim && slices.Equal(a.entries, b.entries) }

// NewWarm returns the warm launchers of path in c (nil: no cgroups). It
// refuses where a warm launcher cannot be found again by its action's
// name (warmCosts). The first slot is made after the first action, whose
// shape it takes.
func NewWarm(path string, c *Cgroups) (*Warm, error) {
	if err := warmCosts(c); err != nil {
		return nil, err
	}
	w := &Warm{path: path, cg: c}
	w.one = ahead.New(w.make, (*slot).discard)
	return w, nil
}

// make makes a slot of the last action's shape.
func (w *Warm) make() (*slot, error) {
	w.mu.Lock()
	sh := w.next
	w.mu.Unlock()
	return newSlot(w.path, w.cg, sh)
}

// take returns the slot if one is ready, or being made, for spec's shape
// and its launcher still waits; else nil, and the next slot is made for
// that shape.
func (w *Warm) take(spec *Spec) *slot {
	if w == nil {
		return nil
	}
	sh := shapeOf(spec)
	w.mu.Lock()
	same := w.next.is(sh) // the slot in flight, if any, is being made for w.next
	w.next = sh
	w.mu.Unlock()
	take := w.one.Take
	if !same {
		take = w.one.TakeReady // waiting would be for a slot this action cannot take
	}
	sl, ok := take()
	switch {
	case !ok:
		return nil
	case !sl.shape.is(sh) || sl.l.h.hasExited() || sl.l.spoke():
		w.one.Go(sl.discard) // of another shape, or died or refused waiting: it was nobody's
		return nil
	}
	return sl
}

// refill makes the next slot in the background, unless one is ready or
// being made, or Close has begun. An action hands it to Spec.After, so
// that the new process starts once the action's end is recorded and its
// start competes with no part of the action's own path; an action that
// comes while a slot is still being made waits for that one (ahead.Take).
func (w *Warm) refill() {
	if w != nil {
		w.one.Refill()
	}
}

// Close ends the warm launcher and removes its cgroups.
func (w *Warm) Close() {
	if w != nil {
		w.one.Close()
	}
}
