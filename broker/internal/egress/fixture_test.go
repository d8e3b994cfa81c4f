package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// origin is an upstream server on 127.0.0.1 that counts the raw bytes
// on its own connections, as a registry's log would.
type origin struct {
	net.Listener
	accepted, closed atomic.Int64
	read, wrote      atomic.Int64
}

func (o *origin) Accept() (net.Conn, error) {
	c, err := o.Listener.Accept()
	if err != nil {
		return nil, err
	}
	o.accepted.Add(1)
	return &originConn{Conn: c, o: o}, nil
}

// entry is the origin's address as a grant names it.
func (o *origin) entry() string { return o.Addr().String() }

type originConn struct {
	net.Conn
	o    *origin
	once sync.Once
}

func (c *originConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.o.read.Add(int64(n))
	return n, err
}

func (c *originConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.o.wrote.Add(int64(n))
	return n, err
}

func (c *originConn) Close() error {
	c.once.Do(func() { c.o.closed.Add(1) })
	return c.Conn.Close()
}

// newOrigin starts an HTTP (or, with tlsOn, HTTPS) origin whose handler
// answers "hello <path>" and records the request it got.
func newOrigin(t *testing.T, tlsOn bool) (*origin, *httptest.Server, chan *http.Request) {
	t.Helper()
	got := make(chan *http.Request, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case got <- r:
		default:
		}
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	}))
	o := &origin{Listener: srv.Listener}
	srv.Listener = o
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return o, srv, got
}

// newProxy starts a proxy closed at the test's end.
func newProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// denials collects what a session's refused callback is given.
type denials struct {
	mu   sync.Mutex
	list []wire.Denial
}

func (d *denials) add(x wire.Denial, _ time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.list = append(d.list, x)
}

func (d *denials) get() []wire.Denial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]wire.Denial(nil), d.list...)
}

// admittedDialer dials the proxy as the broker connects a target's
// socket: bound to a loopback port first, that address admitted, then
// connected.
func admittedDialer(s *Session) *net.Dialer { return boundDialer(0, s.Admit) }

// boundDialer dials the proxy from a socket bound to 127.0.0.1:port (0:
// any), with SO_REUSEADDR, after calling admit with its source address.
func boundDialer(port int, admit func(netip.AddrPort)) *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		cerr := rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			if err = unix.Bind(int(fd), &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
				return
			}
			var sa unix.Sockaddr
			if sa, err = unix.Getsockname(int(fd)); err == nil {
				in := sa.(*unix.SockaddrInet4)
				admit(netip.AddrPortFrom(netip.AddrFrom4(in.Addr), uint16(in.Port)))
			}
		})
		if err == nil {
			err = cerr
		}
		return err
	}}
}

// dial connects to the session's proxy as an admitted client.
func dial(t *testing.T, s *Session) *net.TCPConn {
	t.Helper()
	c, err := admittedDialer(s).Dial("tcp4", s.Proxy().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// connectTo sends CONNECT for authority on c and returns the response.
func connectTo(t *testing.T, c net.Conn, authority string) (*http.Response, *bufio.Reader) {
	t.Helper()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", authority, err)
	}
	return resp, br
}

// httpClient is an ordinary HTTP client whose proxy is the session's.
func httpClient(s *Session, srv *httptest.Server, serverName string) *http.Client {
	tr := &http.Transport{
		Proxy:       http.ProxyURL(&url.URL{Scheme: "http", Host: s.Proxy().String()}),
		DialContext: admittedDialer(s).DialContext,
	}
	if srv.TLS != nil {
		tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		tr.TLSClientConfig.ServerName = serverName
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// settle waits until the session (if any) has no connection open and
// the origin (if any) has closed every connection it accepted: then both
// sides' counts are final.
func settle(t *testing.T, s *Session, o *origin) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n := 0
		if s != nil {
			s.mu.Lock()
			n = len(s.open)
			s.mu.Unlock()
		}
		if n == 0 && (o == nil || o.closed.Load() == o.accepted.Load()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: %d connections open at the proxy", n)
		}
	}
}

// port is the port of an origin.
func (o *origin) port() uint16 { return uint16(o.Addr().(*net.TCPAddr).Port) }
