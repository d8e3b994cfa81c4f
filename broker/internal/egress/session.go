package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"warrant/wire"
)

// Session is one action's use of the proxy: its lease, its grant, and
// the record of every connection it asked for. It is safe for
// concurrent use.
type Session struct {
	p       *Proxy
	lease   string
	granted []string // canonical, sorted, each once
	refused func(wire.Denial, time.Time)
	ctx     context.Context // cancelled by Close: ends resolving and dialling
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the session's goroutines

	mu      sync.Mutex
	closed  bool
	open    map[io.Closer]struct{} // client and upstream connections
	clients int                    // client connections in open
	egress  wire.Egress            // Totals in granted's order; Connections the first wire.MaxConnections
}

// Open starts a session for the action of lease, which may reach the
// granted entries (canonical, sorted, each once, as a
// wire.CommandIdentity holds them; anything else is an internal error).
// refused, if not nil, is called for each connection the proxy refuses
// by a rule (wire.RuleNotOnLease, wire.RulePrivateAddress), from any
// goroutine. A session of a closed proxy is closed.
func (p *Proxy) Open(lease string, granted []string, refused func(wire.Denial, time.Time)) *Session {
	granted = slices.Clone(granted)
	for i, e := range granted {
		if _, _, err := wire.SplitEgressEntry(e); err != nil || i > 0 && granted[i-1] >= e {
			panic(fmt.Sprintf("egress: internal error: grant %q is not canonical, sorted, each entry once", granted))
		}
	}
	s := &Session{p: p, lease: lease, granted: granted, refused: refused, open: map[io.Closer]struct{}{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.egress.Granted = granted
	for _, e := range granted {
		s.egress.Totals = append(s.egress.Totals, wire.EgressTotal{Entry: e})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.closed = p.closed; !s.closed {
		p.sessions[s] = struct{}{}
	}
	return s
}

// Proxy is the address of the proxy, the one address the action's
// connect calls are given.
func (s *Session) Proxy() netip.AddrPort { return s.p.addr }

// Admit makes the next connection to the proxy from local (the address
// the broker bound the target's socket to) the session's. Call it before
// connecting.
func (s *Session) Admit(local netip.AddrPort) {
	key := netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.p.admitted[key] = s
	}
}

// Close ends the session: the action is over. It closes the session's
// open connections, waits for their goroutines, and returns what the
// action did with its grant. Closing again returns the same.
func (s *Session) Close() *wire.Egress {
	s.mu.Lock()
	s.closed = true
	for c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.p.mu.Lock()
	for k, v := range s.p.admitted {
		if v == s {
			delete(s.p.admitted, k)
		}
	}
	delete(s.p.sessions, s)
	s.p.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.egress
	e.Granted = slices.Clone(e.Granted)
	e.Totals = slices.Clone(e.Totals)
	e.Connections = slices.Clone(e.Connections)
	return &e
}

// start serves a client connection the session admitted.
func (s *Session) start(c *net.TCPConn) {
	s.mu.Lock()
	full := s.clients >= maxOpen
	ok := !s.closed && !full
	if ok {
		s.clients++
		s.open[c] = struct{}{}
		s.wg.Add(1)
	}
	s.mu.Unlock()
	switch {
	case ok:
		go s.serve(c)
	case full:
		c.Close()
		a := s.begin("", 0, -1)
		a.rec.Reason = fmt.Sprintf("more than %d connections open at once", maxOpen)
		s.end(a)
	default:
		c.Close()
	}
}

// track adds an upstream connection to those Close closes; false (and c
// closed) if the session is closed.
func (s *Session) track(c io.Closer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.open[c] = struct{}{}
	return true
}

// drop closes a connection and forgets it.
func (s *Session) drop(c io.Closer) {
	c.Close()
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
}

// serve serves one client connection, then closes it.
func (s *Session) serve(c *net.TCPConn) {
	defer s.wg.Done()
	cl := &client{s: s, conn: c, in: &meter{c: c}}
	cl.br = bufio.NewReaderSize(cl.in, 4<<10)
	cl.run()
	cl.release()
	s.drop(c)
	s.mu.Lock()
	s.clients--
	s.mu.Unlock()
}

// attempt is one connection the client asked for, from its request to
// the end of its upstream connection.
type attempt struct {
	slot  int // in s.egress.Connections, or -1 past the cap
	entry int // in s.granted, or -1
	rec   wire.EgressConnection
}

// grant returns the index of entry in the grant, or -1.
func (s *Session) grant(entry string) int {
	if i, ok := slices.BinarySearch(s.granted, entry); ok {
		return i
	}
	return -1
}

// begin counts an attempt to reach host:port, granted entry (or -1),
// and reserves its record, in the order attempts began, while fewer than
// wire.MaxConnections are kept.
func (s *Session) begin(host string, port uint16, entry int) *attempt {
	a := &attempt{slot: -1, entry: entry, rec: wire.EgressConnection{Host: host, Port: port, Start: time.Now().UnixNano()}}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.egress.Total++
	if a.entry >= 0 {
		s.egress.Totals[a.entry].Connections++
	}
	if len(s.egress.Connections) < wire.MaxConnections {
		a.slot = len(s.egress.Connections)
		s.egress.Connections = append(s.egress.Connections, a.rec)
	}
	return a
}

// end completes an attempt's record and adds its bytes to its entry's.
func (s *Session) end(a *attempt) {
	a.rec.End = time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !a.rec.Allowed {
		s.egress.Refused++
	}
	if a.entry >= 0 {
		t := &s.egress.Totals[a.entry]
		t.Up += a.rec.Up
		t.Down += a.rec.Down
	}
	if a.slot >= 0 {
		s.egress.Connections[a.slot] = a.rec
	}
}
