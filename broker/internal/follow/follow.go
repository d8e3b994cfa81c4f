package follow

import (
	"sync"
	"time"

	"warrant/wire"
)

// The bounds (see the package doc).
const (
	QueueBytes = 256 << 10 // one follower's queue
	EarlyBytes = 256 << 10 // one action's held first bytes
	MaxEarly   = 8 << 20   // all actions' held bytes together
	Linger     = 30 * time.Second
)

// Part is one piece of a followed stream: Data, or a gap of NotStreamed
// bytes that this follower was not sent.
type Part struct {
	Stream      wire.OutputStream
	Data        []byte
	NotStreamed uint64
}

// Hub is the fan-out of every action's output. The zero value is not
// usable; call New. It is safe for concurrent use.
type Hub struct {
	now func() time.Time

	mu      sync.Mutex
	actions map[string]*action
	early   int // bytes held in early buffers, all actions together
}

type action struct {
	early      []Part // the first bytes, as released, shared read-only with followers
	earlyBytes int
	missed     [3]uint64 // bytes per stream released and not held in early
	subs       map[*Sub]struct{}
	ended      time.Time // zero while running
}

// New returns an empty hub.
func New() *Hub { return &Hub{now: time.Now, actions: map[string]*action{}} }

// Publish hands the redacted output p of one stream of handle to its
// followers and holds it for later ones, within the bounds. It copies p
// once, and only when someone keeps it (a follower's queue with room, or
// the early buffer), and never blocks.
func (h *Hub) Publish(handle string, s wire.OutputStream, p []byte) {
	if len(p) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.get(handle)
	c := copied{src: p}
	if a.earlyBytes+len(p) <= EarlyBytes && h.early+len(p) <= MaxEarly && a.missed == [3]uint64{} {
		a.early = append(a.early, Part{Stream: s, Data: c.data()})
		a.earlyBytes += len(p)
		h.early += len(p)
	} else {
		a.missed[s] += uint64(len(p))
	}
	for sub := range a.subs {
		sub.add(s, &c)
	}
}

// copied is published bytes and, once someone keeps them, their copy:
// the caller's slice is only lent for the call.
type copied struct {
	src, dst []byte
}

func (c *copied) data() []byte {
	if c.dst == nil {
		c.dst = append([]byte(nil), c.src...)
	}
	return c.dst
}

// End marks handle's action ended: its followers are told once they have
// taken what is queued. Its held output lingers for Linger. End is
// idempotent, and a no-op for a handle the hub never saw.
func (h *Hub) End(handle string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweep()
	a, ok := h.actions[handle]
	if !ok || !a.ended.IsZero() {
		return
	}
	a.ended = h.now()
	for sub := range a.subs {
		sub.end()
	}
}

// get returns handle's entry, creating it. h.mu is held.
func (h *Hub) get(handle string) *action {
	a, ok := h.actions[handle]
	if !ok {
		h.sweep()
		a = &action{subs: map[*Sub]struct{}{}}
		h.actions[handle] = a
	}
	return a
}

// sweep frees the entries of actions that ended more than Linger ago and
// have no follower. h.mu is held.
func (h *Hub) sweep() {
	cut := h.now().Add(-Linger)
	for k, a := range h.actions {
		if !a.ended.IsZero() && a.ended.Before(cut) && len(a.subs) == 0 {
			h.early -= a.earlyBytes
			delete(h.actions, k)
		}
	}
}

// Subscribe starts following handle: the returned Sub is first given the
// output held for it, then everything published from now on. The caller
// must Close it; it must also make sure End is called once the action is
// over (the broker does when it records the end; a follower that finds
// the action already over calls End itself).
func (h *Hub) Subscribe(handle string) *Sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.get(handle)
	sub := &Sub{h: h, handle: handle, wake: make(chan struct{}, 1)}
	for _, p := range a.early {
		sub.add(p.Stream, &copied{src: p.Data, dst: p.Data}) // held bytes are shared read-only
	}
	for s, n := range a.missed {
		sub.gap[s] += n
	}
	if !a.ended.IsZero() {
		sub.end()
	}
	a.subs[sub] = struct{}{}
	return sub
}

// Sub is one follower of one action.
type Sub struct {
	h      *Hub
	handle string
	wake   chan struct{} // a token whenever there is something to take

	// guarded by h.mu
	queue  []Part
	queued int
	gap    [3]uint64 // bytes per stream not queued since the last Take
	ended  bool
}

// add queues c's bytes of stream st, or counts them as a gap when the
// queue is full. h.mu is held.
func (s *Sub) add(st wire.OutputStream, c *copied) {
	n := len(c.src)
	if s.queued+n > QueueBytes {
		s.gap[st] += uint64(n)
	} else {
		s.flushGap(st) // a gap stays where it happened
		s.queue = append(s.queue, Part{Stream: st, Data: c.data()})
		s.queued += n
	}
	s.signal()
}

// flushGap queues a pending gap of stream st as a Part. h.mu is held.
func (s *Sub) flushGap(st wire.OutputStream) {
	if n := s.gap[st]; n > 0 {
		s.queue = append(s.queue, Part{Stream: st, NotStreamed: n})
		s.gap[st] = 0
	}
}

func (s *Sub) end() {
	s.ended = true
	s.signal()
}

func (s *Sub) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Wake receives a token whenever Take may have something new.
func (s *Sub) Wake() <-chan struct{} { return s.wake }

// Take returns what is queued (gaps included) and whether the action has
// ended; once it has, and Take returned nothing more, the stream is
// complete.
func (s *Sub) Take() (parts []Part, ended bool) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	for st := range s.gap {
		s.flushGap(wire.OutputStream(st))
	}
	parts, s.queue, s.queued = s.queue, nil, 0
	return parts, s.ended
}

// Close stops following. An entry left with no follower and nothing held
// is freed at once (Publish makes a new one if the action prints later):
// following a handle that does not exist leaves nothing behind.
func (s *Sub) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if a, ok := s.h.actions[s.handle]; ok {
		delete(a.subs, s)
		if len(a.subs) == 0 && a.earlyBytes == 0 && a.missed == [3]uint64{} {
			delete(s.h.actions, s.handle)
		}
	}
	s.h.sweep()
}
