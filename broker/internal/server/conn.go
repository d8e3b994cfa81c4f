package server

import (
	"context"
	"net"
	"sync"
	"time"
)

// Conn is the connection a request arrived on, as its handler sees it
// (ConnOf). A handler whose answer depends on the peer staying connected
// (a pending approval request lives only while its requester waits)
// watches it: while any watch is in force the connection is not closed
// for being idle — its open socket is the fact relied on — and every
// watch not stopped is told once the connection has ended.
type Conn struct {
	nc   *net.UnixConn
	idle time.Duration

	mu      sync.Mutex
	watches map[*watch]struct{}
	ended   bool
}

type watch struct{ gone func(shutdown bool) }

type connKey struct{}

// ConnOf returns the connection a handler's request arrived on, or nil
// for a call made in process.
func ConnOf(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

// Watch calls gone once the connection has ended, unless stop was called
// first. gone's argument says whether it ended because the server is
// shutting down rather than because the peer went away (closed it, or
// broke the protocol). gone runs on the connection's goroutine before
// Serve returns; it must not call stop.
func (c *Conn) Watch(gone func(shutdown bool)) (stop func()) {
	w := &watch{gone: gone}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return func() {}
	}
	if c.watches == nil {
		c.watches = map[*watch]struct{}{}
	}
	c.watches[w] = struct{}{}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.watches[w]; !ok {
			return
		}
		delete(c.watches, w)
		if len(c.watches) == 0 && !c.ended {
			c.nc.SetReadDeadline(time.Now().Add(c.idle)) // idle from now on
		}
	}
}

// watched reports whether a watch is in force.
func (c *Conn) watched() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches) > 0
}

// awaitFrame sets the deadline for the next frame to begin: the idle
// timeout, or none while the connection is watched.
func (c *Conn) awaitFrame() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.watches) > 0 {
		c.nc.SetReadDeadline(time.Time{})
	} else {
		c.nc.SetReadDeadline(time.Now().Add(c.idle))
	}
}

// frameBegan gives a frame that began the idle timeout to complete, as
// every frame has.
func (c *Conn) frameBegan() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nc.SetReadDeadline(time.Now().Add(c.idle))
}

// end tells every watch in force that the connection has ended.
func (c *Conn) end(shutdown bool) {
	c.mu.Lock()
	ws := c.watches
	c.watches, c.ended = nil, true
	c.mu.Unlock()
	for w := range ws {
		w.gone(shutdown)
	}
}
