package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Bounds on what a client or an upstream can make the proxy wait for or
// hold.
const (
	maxHead        = 16 << 10         // a request's (or response's) line and headers
	headTimeout    = 30 * time.Second // to send a request head
	resolveTimeout = 10 * time.Second // to resolve a granted name
	dialTimeout    = 10 * time.Second // to connect to one address
	connectTimeout = 30 * time.Second // to resolve and connect, all addresses
	helloTimeout   = 10 * time.Second // for a tunnel's first bytes, to read their SNI
	maxHello       = 64 << 10         // bytes read to find a ClientHello's end
	maxOpen        = 256              // a session's client connections open at once

	// admissionLife is how long an admission waits for its connection.
	// The broker admits a source just before it connects from it, and its
	// connect ends within 5 s (metadata's connectLimit; a SYN the proxy
	// dropped is sent again after 1 s and 3 s); a non-blocking one whose
	// SYN the proxy ignores (a TCP_MD5SIG key the target set) keeps its
	// admission though, and the target can close the socket and leave it
	// behind, on port after port. An admission older than this is taken
	// as absent, so that a later socket that gets its port is not
	// admitted twice, and refused, by it.
	admissionLife = 30 * time.Second
)

// Proxy is the broker's egress proxy: one listener on 127.0.0.1 that
// serves every session (action) by the source address of a connection,
// which the broker bound and admitted (Session.Admit) before it
// connected the target's socket. It is safe for concurrent use.
type Proxy struct {
	ln   *net.TCPListener
	addr netip.AddrPort
	// resolve looks a granted name up; tests replace it before Open.
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// now is the clock admissions are stamped by, read under mu; tests
	// replace it before Open.
	now  func() time.Time
	done chan struct{} // closed when the accept loop has returned

	mu       sync.Mutex
	closed   bool
	admitted map[netip.AddrPort]*admission // by source address, until its connection is accepted
	sessions map[*Session]struct{}         // open
}

// admission is the open sessions that admitted a source address: one,
// or, when it was admitted twice (twice), those of them not closed; at
// is when it was last admitted.
type admission struct {
	sessions []*Session
	twice    bool
	at       time.Time
}

// admission is the admission of key, or nil; one older than
// admissionLife is dropped and nil. p.mu is held.
func (p *Proxy) admission(key netip.AddrPort) *admission {
	a := p.admitted[key]
	if a != nil && p.now().Sub(a.at) > admissionLife {
		delete(p.admitted, key)
		return nil
	}
	return a
}

// Listen starts a proxy on 127.0.0.1, on a port the kernel chooses.
func Listen() (*Proxy, error) {
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("listen for the egress proxy: %w", err)
	}
	p := &Proxy{
		ln:       ln,
		addr:     ln.Addr().(*net.TCPAddr).AddrPort(),
		resolve:  lookup,
		now:      time.Now,
		done:     make(chan struct{}),
		admitted: map[netip.AddrPort]*admission{},
		sessions: map[*Session]struct{}{},
	}
	go p.serve()
	return p, nil
}

func lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() netip.AddrPort { return p.addr }

// Close stops the proxy: it accepts no more connections and closes every
// session's (Session.Close).
func (p *Proxy) Close() error {
	err := p.ln.Close()
	<-p.done
	p.mu.Lock()
	p.closed = true
	sessions := make([]*Session, 0, len(p.sessions))
	for s := range p.sessions {
		sessions = append(sessions, s)
	}
	p.mu.Unlock()
	for _, s := range sessions {
		s.Close()
	}
	if err != nil {
		return fmt.Errorf("close the egress proxy: %w", err)
	}
	return nil
}

// serve accepts connections until the listener is closed.
func (p *Proxy) serve() {
	defer close(p.done)
	var delay time.Duration
	for {
		c, err := p.ln.AcceptTCP()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of descriptors, or the like: back off and go on
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
		p.accept(c)
	}
}

// accept hands c to the session that admitted its source address, once:
// the admission is used up. A connection no session admitted (or not
// within admissionLife) is closed before a byte is read from it; so is
// one from an address admitted twice, which each session that admitted
// it records.
func (p *Proxy) accept(c *net.TCPConn) {
	key := unmapped(c.RemoteAddr().(*net.TCPAddr).AddrPort())
	p.mu.Lock()
	a := p.admission(key)
	delete(p.admitted, key)
	p.mu.Unlock()
	switch {
	case a == nil:
		c.Close()
	case a.twice: // recorded before the close its client may be waiting for
		for _, s := range a.sessions {
			s.note(fmt.Sprintf("source address %s was admitted twice, so the connection is no action's", key))
		}
		c.Close()
	default:
		a.sessions[0].start(c)
	}
}
