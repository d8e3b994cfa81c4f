package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
// the broker bound the target's socket to) within admissionLife the
// session's. Call it before connecting. An address admitted again before
// its connection came, by this session or another, is no session's: its
// connection is refused unread and the attempt recorded by each that
// admitted it, since the proxy cannot tell whose it is. A closed session
// admits nothing.
func (s *Session) Admit(local netip.AddrPort) {
	key := unmapped(local)
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := s.p.now()
	a := s.p.admission(key)
	if a == nil {
		s.p.admitted[key] = &admission{sessions: []*Session{s}, at: now}
		return
	}
	a.twice, a.at = true, now
	if !slices.Contains(a.sessions, s) {
		a.sessions = append(a.sessions, s)
	}
}

// Withdraw undoes the session's admission of local when the broker's
// connect from it failed: no connection of the target's is coming. One
// admitted twice stays refused.
func (s *Session) Withdraw(local netip.AddrPort) {
	key := unmapped(local)
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if a := s.p.admitted[key]; a != nil && !a.twice && a.sessions[0] == s {
		delete(s.p.admitted, key)
	}
}

// unmapped is ap with an IPv4-mapped address as IPv4.
func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
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
	for k, a := range s.p.admitted {
		if a.sessions = slices.DeleteFunc(a.sessions, func(o *Session) bool { return o == s }); len(a.sessions) == 0 {
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
	for i := range e.Connections {
		c := &e.Connections[i]
		c.Host, c.Address, c.SNI = valid(c.Host, maxRecorded), valid(c.Address, maxRecorded), valid(c.SNI, maxRecorded)
		c.Reason = valid(c.Reason, maxReason)
	}
	return &e
}

// maxReason is wire's cap on a record's reason (wire.Egress.Validate).
const maxReason = 4096

// valid is s if wire takes it as text of at most max bytes, else s as
// recorded keeps it: Close's record, a receipt's, must validate, and
// keeps the connection whatever text was recorded for it. Text a client
// sent is made valid where it is recorded; this is the backstop.
func valid(s string, max int) string {
	if len(s) <= max && utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return recorded(s, max)
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
	if ok {
		go s.serve(c)
		return
	}
	c.Close()
	if full {
		s.note(fmt.Sprintf("more than %d connections open at once", maxOpen))
	}
}

// note records a connection refused unread, with reason, unless the
// session is closed: Close's record is final.
func (s *Session) note(reason string) {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.wg.Add(1) // before Close can wait: closed is set under mu first
	}
	s.mu.Unlock()
	if closed {
		return
	}
	defer s.wg.Done()
	a := s.begin("", 0, -1)
	a.rec.Reason = reason
	s.end(a)
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
