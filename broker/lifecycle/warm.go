//go:build linux || darwin

package lifecycle

import "warrant/internal/ahead"

// Warm keeps one launcher started ahead of the next action, so that an
// action does not wait for a process to start and its runtime to come
// up: about half of an action's own time for /bin/true
// (BenchmarkRunTruePhases). A warm launcher has done nothing but what
// every launcher does before its request: it has cleaned its slate and
// waits to read that request, and it knows nothing of any action. It
// was started exactly as a cold one is (startLauncher), in the hold (the cgroup
// v2 directory warm-<random> of this broker, when it has cgroup v2), and
// the action that takes it places it in its own cgroups, v2 and v1,
// before its origin is recorded and its request sent: nothing of the
// action runs outside them, as with a cold launcher. One that died
// while it waited is reaped and the action starts its own. A broker
// that dies leaves its warm launcher with the other end of its request
// socket closed: it reads end of stream, refuses and exits, and the next
// broker removes the empty hold as a leftover (or ends what is in it:
// a process in a hold has never been sent a request). A hold removed
// under a running broker (with its whole cgroup directory, which the
// next action makes again) is made again by the next refill.
//
// A nil *Warm starts every launcher when its action needs it.
type Warm struct {
	path string
	cg   *Cgroups
	hold *hold // used by the refill in flight alone, until Close
	one  *ahead.One[*launcher]
}

// NewWarm makes the hold in c (nil: no cgroups) and starts the first warm
// launcher of path in the background. It refuses where a warm launcher
// would cost more than it saves (warmCosts).
func NewWarm(path string, c *Cgroups) (*Warm, error) {
	if err := warmCosts(c); err != nil {
		return nil, err
	}
	h, err := newHold(c)
	if err != nil {
		return nil, err
	}
	w := &Warm{path: path, cg: c, hold: h}
	w.one = ahead.New(w.start, (*launcher).abandon)
	w.one.Refill()
	return w, nil
}

// start starts a launcher in the hold.
func (w *Warm) start() (*launcher, error) {
	l, err := startLauncher(w.path, w.hold.fd)
	if err != nil && w.hold.gone() {
		// Someone removed the hold (or this broker's whole cgroup
		// directory, which an action then makes again): a new one.
		if h, herr := newHold(w.cg); herr == nil {
			w.hold.remove()
			w.hold = h
			l, err = startLauncher(w.path, w.hold.fd)
		}
	}
	return l, err
}

// take returns the warm launcher, or nil when there is none ready.
func (w *Warm) take() *launcher {
	if w == nil {
		return nil
	}
	l, ok := w.one.Take()
	if !ok {
		return nil
	}
	if l.h.hasExited() {
		l.abandon() // it died waiting, before it was anyone's
		return nil
	}
	return l
}

// refill starts the next warm launcher in the background, unless one is
// ready or being started, or Close has begun. An action calls it once its
// own launcher is done with (after the handshake), so that the new
// process does not compete with the action's start.
func (w *Warm) refill() {
	if w != nil {
		w.one.Refill()
	}
}

// Close ends the warm launcher and removes the hold.
func (w *Warm) Close() {
	if w == nil {
		return
	}
	w.one.Close()
	w.hold.remove()
}
