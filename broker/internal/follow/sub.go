package follow

import (
	"warrant/wire"
)

// Sub is one follower of one action: its offset in each stream, the next
// byte it is to be sent. Next, At and Close belong to one goroutine;
// Wake may be waited on from any.
type Sub struct {
	h      *Hub
	handle string
	a      *action
	wake   chan struct{} // a token whenever Next may have something new

	at, from [2]uint64 // guarded by a.mu; from: where it started
	room     [2]uint64 // data it may still be sent of each stream (Limit)
	turn     int       // the stream tried first next time
	buf      [wire.MaxChunkData]byte
}

// Limit bounds the data the follower is sent of each stream to n bytes
// (gaps do not count); Next sends nothing more of a stream that reached
// it, and Spent says so. Call it before Next.
func (s *Sub) Limit(n uint64) { s.room = [2]uint64{n, n} }

// Spent reports whether a stream followed reached its Limit.
func (s *Sub) Spent() bool {
	return (s.room[0] == 0 && s.at[0] != Done) || (s.room[1] == 0 && s.at[1] != Done)
}

// sent moves stream k's offset past n bytes of data sent. a.mu is held.
func (s *Sub) sent(k int, n uint64) {
	s.at[k] += n
	if s.room[k] != Done {
		s.room[k] -= n
	}
}

func (s *Sub) claim() *claim { return &claim{at: s.at, floor: s.from, limit: Done, resume: s.h.resume} }

func (s *Sub) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Wake receives a token whenever Next may have something new.
func (s *Sub) Wake() <-chan struct{} { return s.wake }

// At returns the follower's offsets: the next byte of each stream it is
// to be sent (Done for a stream it does not follow).
func (s *Sub) At() [2]uint64 {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.at
}

// Next returns the next part for the follower, of at most
// wire.MaxChunkData bytes, taking turns between the streams when both
// have some; its Data is valid until the next call. With nothing to
// send it returns a zero Part, and done once the action has ended and
// the follower has been sent all of it.
func (s *Sub) Next() (p Part, done bool) {
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range 2 {
		k := (s.turn + i) % 2
		at, st := s.at[k], &a.streams[k]
		if at >= st.total || s.room[k] == 0 {
			continue
		}
		s.turn = k ^ 1
		p = Part{Stream: wire.OutputStream(k + 1), Offset: at}
		if at >= st.memFrom {
			n := min(uint64(len(s.buf)), st.total-at, s.room[k])
			c := uint64(len(st.ring))
			for got := uint64(0); got < n; {
				i := (at + got) % c
				got += uint64(copy(s.buf[got:n], st.ring[i:]))
			}
			p.Data = s.buf[:n]
			s.sent(k, n)
			return p, false
		}
		sp, ok := st.spill.at(at)
		if ok {
			n, err := st.spill.read(at, sp, s.buf[:min(uint64(len(s.buf)), s.room[k])])
			if err == nil {
				p.Data = s.buf[:n]
				s.sent(k, uint64(n))
				a.trim()
				return p, false
			}
			sp.from = sp.to // unreadable: a gap to the span's end
		}
		p.NotStreamed = min(sp.from, st.memFrom) - at
		s.at[k] += p.NotStreamed
		a.trim()
		return p, false
	}
	return Part{}, !a.ended.IsZero()
}

// Close stops following. A follower that leaves before it was sent the
// whole output of an action that printed is parked: what it was not sent
// is kept for whoever resumes from its offsets (Subscribe), until
// ParkLinger after the end. An entry left holding nothing is freed at
// once: following a handle that does not exist leaves nothing behind.
func (s *Sub) Close() {
	a := s.a
	a.mu.Lock()
	delete(a.subs, s)
	if !a.removed && a.published() {
		c := *s.claim()
		for k := range c.at {
			if a.ended.IsZero() || c.at[k] < a.streams[k].total {
				continue
			}
			c.at[k] = Done // it has all of this stream
		}
		a.park(c)
		a.settle()
	}
	a.trim()
	idle := !a.removed && a.idle()
	a.mu.Unlock()
	if idle {
		s.h.sweep()
	}
}
