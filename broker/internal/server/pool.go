package server

import (
	"net"
	"sync"
	"time"

	"warrant/wire"
)

// evictWait bounds how long a new connection waits for the slot of the
// idle connection evicted for it.
const evictWait = time.Second

// pool is one socket's connections, at most cap(slots) of them.
type pool struct {
	slots chan struct{}
	mu    sync.Mutex
	conns map[*conn]struct{}
}

// conn is one served connection and whether it waits for a request.
type conn struct {
	nc      *net.UnixConn
	p       *pool
	waiting bool      // between requests (or reading one): may be evicted
	since   time.Time // when it began waiting
	evicted bool
}

func newPool(max int) *pool {
	return &pool{slots: make(chan struct{}, max), conns: map[*conn]struct{}{}}
}

// admit takes a slot for a new connection: a free one, or that of the
// connection idle longest, which is told BUSY and closed. False: every
// connection is in a request.
func (p *pool) admit(ch wire.Channel) bool {
	select {
	case p.slots <- struct{}{}:
		return true
	default:
	}
	if !p.evictIdlest(ch) {
		return false
	}
	select {
	case p.slots <- struct{}{}:
		return true
	case <-time.After(evictWait):
		return false
	}
}

// evictIdlest closes the connection that has waited longest for its next
// request, with a BUSY notice, and reports whether there was one. Its
// goroutine frees its slot on the way out.
func (p *pool) evictIdlest(ch wire.Channel) bool {
	p.mu.Lock()
	var oldest *conn
	for sc := range p.conns {
		if sc.waiting && !sc.evicted && (oldest == nil || sc.since.Before(oldest.since)) {
			oldest = sc
		}
	}
	if oldest != nil {
		oldest.evicted = true
	}
	p.mu.Unlock()
	if oldest == nil {
		return false
	}
	refuse(oldest.nc, wire.Errorf(wire.CodeBusy, "this idle connection to the %s socket was closed to make room for a new one (%d at most); connect again", ch, cap(p.slots)))
	return true
}

func (p *pool) add(nc *net.UnixConn) *conn {
	sc := &conn{nc: nc, p: p}
	p.mu.Lock()
	p.conns[sc] = struct{}{}
	p.mu.Unlock()
	return sc
}

// remove closes sc and frees its slot.
func (p *pool) remove(sc *conn) {
	p.mu.Lock()
	delete(p.conns, sc)
	p.mu.Unlock()
	sc.nc.Close()
	<-p.slots
}

func (p *pool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for sc := range p.conns {
		sc.nc.Close()
	}
}

// idle marks sc as waiting for its next request; false: it was evicted.
func (sc *conn) idle() bool {
	sc.p.mu.Lock()
	defer sc.p.mu.Unlock()
	sc.waiting, sc.since = true, time.Now()
	return !sc.evicted
}

// busy marks sc as in a request; false: it was evicted, and what it read
// is not to be handled.
func (sc *conn) busy() bool {
	sc.p.mu.Lock()
	defer sc.p.mu.Unlock()
	sc.waiting = false
	return !sc.evicted
}
