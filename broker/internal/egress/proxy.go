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
	done    chan struct{} // closed when the accept loop has returned

	mu       sync.Mutex
	closed   bool
	admitted map[netip.AddrPort]*Session // source address → session, until its connection is accepted
	sessions map[*Session]struct{}       // open
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
		done:     make(chan struct{}),
		admitted: map[netip.AddrPort]*Session{},
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
// the admission is used up. A connection no session admitted is closed
// without a byte read from it.
func (p *Proxy) accept(c *net.TCPConn) {
	peer := c.RemoteAddr().(*net.TCPAddr).AddrPort()
	key := netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	p.mu.Lock()
	s := p.admitted[key]
	delete(p.admitted, key)
	p.mu.Unlock()
	if s == nil {
		c.Close()
		return
	}
	s.start(c)
}
