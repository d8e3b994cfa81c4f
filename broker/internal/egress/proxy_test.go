package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// TestPlainHTTP fetches through the proxy as an ordinary client does for
// http:// URLs: absolute form, kept alive, two destinations on one
// connection. Each origin gets its requests in origin form with its own
// Host and no proxy headers, on one connection, and each connection's
// record counts exactly the bytes its origin counted.
func TestPlainHTTP(t *testing.T) {
	o1, _, got1 := newOrigin(t, false)
	o2, _, got2 := newOrigin(t, false)
	p := newProxy(t)
	var d denials
	s := p.Open("lease-1", sorted(o1.entry(), o2.entry()), d.add)
	c := dial(t, s)
	br := bufio.NewReader(c)
	for i, to := range []struct {
		o    *origin
		got  chan *http.Request
		path string
	}{{o1, got1, "/a"}, {o1, got1, "/b"}, {o2, got2, "/c"}} {
		fmt.Fprintf(c, "GET http://%s%s HTTP/1.1\r\nHost: elsewhere.example\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\r\n", to.o.entry(), to.path)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "hello "+to.path {
			t.Fatalf("request %d: %s %q", i, resp.Status, body)
		}
		r := <-to.got
		if r.Host != to.o.entry() || r.RequestURI != to.path || r.Header.Get("Proxy-Authorization") != "" || r.Header.Get("Proxy-Connection") != "" {
			t.Errorf("the origin got Host %q, URI %q, headers %v", r.Host, r.RequestURI, r.Header)
		}
	}
	c.Close()
	settle(t, s, o1)
	settle(t, s, o2)
	e := s.Close()
	if o1.accepted.Load() != 1 || o2.accepted.Load() != 1 {
		t.Errorf("the origins accepted %d and %d connections, want 1 each", o1.accepted.Load(), o2.accepted.Load())
	}
	if e.Total != 2 || e.Refused != 0 || len(e.Connections) != 2 || len(d.get()) != 0 {
		t.Fatalf("egress %+v, denials %v", e, d.get())
	}
	for i, o := range []*origin{o1, o2} {
		r := e.Connections[i]
		want := wire.EgressConnection{Host: "127.0.0.1", Port: o.port(), Address: "127.0.0.1", Allowed: true,
			Up: uint64(o.read.Load()), Down: uint64(o.wrote.Load()), Start: r.Start, End: r.End}
		if r != want || r.Up == 0 || r.Down == 0 || r.Start == 0 || r.End < r.Start {
			t.Errorf("record %+v, want %+v", r, want)
		}
		tot := e.Totals[slices.Index(e.Granted, o.entry())]
		if tot.Connections != 1 || tot.Up != r.Up || tot.Down != r.Down {
			t.Errorf("totals %+v", e.Totals)
		}
	}
}

// TestStaleUpstream: an upstream that closed a kept-alive connection is
// not given the next request; another connection (and record) is.
func TestStaleUpstream(t *testing.T) {
	o, srv, _ := newOrigin(t, false)
	p := newProxy(t)
	s := p.Open("lease-9", []string{o.entry()}, nil)
	c := dial(t, s)
	br := bufio.NewReader(c)
	for i := range 2 {
		fmt.Fprintf(c, "GET http://%s/%d HTTP/1.1\r\n\r\n", o.entry(), i)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
		srv.CloseClientConnections()
		settle(t, nil, o) // the origin has closed the connection
	}
	c.Close()
	if e := s.Close(); e.Total != 2 || o.accepted.Load() != 2 {
		t.Errorf("egress %+v; the origin accepted %d", e, o.accepted.Load())
	}
}

// TestConnectTLS fetches through a CONNECT tunnel with TLS end to end:
// the record has the ClientHello's server name and exactly the bytes
// the origin counted on its raw connection.
func TestConnectTLS(t *testing.T) {
	o, srv, _ := newOrigin(t, true)
	p := newProxy(t)
	s := p.Open("lease-2", []string{o.entry()}, nil)
	c := dial(t, s)
	resp, br := connectTo(t, c, o.entry())
	if resp.StatusCode != 200 || br.Buffered() != 0 {
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.ServerName = "example.com"
	tc := tls.Client(c, cfg)
	fmt.Fprintf(tc, "GET /tls HTTP/1.1\r\nHost: example.com\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "hello /tls" {
		t.Fatalf("body %q", body)
	}
	// Close cleanly, both ways, so that every byte sent is read.
	tc.CloseWrite() // close_notify
	c.CloseWrite()
	if _, err := io.Copy(io.Discard, tc); err != nil {
		t.Fatal(err)
	}
	settle(t, s, o)
	e := s.Close()
	if e.Total != 1 || len(e.Connections) != 1 {
		t.Fatalf("egress %+v", e)
	}
	r := e.Connections[0]
	if !r.Allowed || r.SNI != "example.com" || r.Address != "127.0.0.1" || r.Up != uint64(o.read.Load()) || r.Down != uint64(o.wrote.Load()) {
		t.Errorf("record %+v; the origin read %d, wrote %d", r, o.read.Load(), o.wrote.Load())
	}
}

// TestOrdinaryClient: net/http's client, with the proxy as its proxy,
// reaches both origins (http:// and https://) and gets their answers.
func TestOrdinaryClient(t *testing.T) {
	plain, plainSrv, _ := newOrigin(t, false)
	secure, secureSrv, _ := newOrigin(t, true)
	p := newProxy(t)
	s := p.Open("lease-3", sorted(plain.entry(), secure.entry()), nil)
	for _, srv := range []string{plainSrv.URL, secureSrv.URL} {
		hc := httpClient(s, secureSrv, "example.com")
		resp, err := hc.Get(srv + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hc.CloseIdleConnections()
		if string(body) != "hello /x" {
			t.Errorf("%s: %q", srv, body)
		}
	}
	settle(t, s, nil)
	if e := s.Close(); e.Total != 2 || e.Refused != 0 || e.Connections[1].SNI != "example.com" {
		t.Errorf("egress %+v", e)
	}
}

// TestRefusedNotGranted: a destination not on the grant is refused with
// a 403 that says why, the origin gets no connection, and the refusal is
// a record and a denial.
func TestRefusedNotGranted(t *testing.T) {
	granted, _, _ := newOrigin(t, false)
	other, _, _ := newOrigin(t, false)
	p := newProxy(t)
	var d denials
	s := p.Open("lease-4", []string{granted.entry()}, d.add)
	for _, req := range []string{
		"CONNECT " + other.entry() + " HTTP/1.1\r\n\r\n",
		"GET http://" + other.entry() + "/ HTTP/1.1\r\n\r\n",
		"CONNECT LOCALHOST:" + fmt.Sprint(granted.port()) + " HTTP/1.1\r\n\r\n",
	} {
		c := dial(t, s)
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 403 || resp.Header.Get("X-Warrant-Refused") != "not-on-egress-lease" ||
			!strings.Contains(string(body), "lease-4") || !strings.Contains(string(body), granted.entry()) {
			t.Errorf("%q: %s %v %q", req, resp.Status, resp.Header, body)
		}
	}
	settle(t, s, nil)
	e := s.Close()
	if n := other.accepted.Load() + granted.accepted.Load(); n != 0 {
		t.Errorf("the origins accepted %d connections", n)
	}
	if e.Total != 3 || e.Refused != 3 || e.Totals[0].Connections != 0 {
		t.Errorf("egress %+v", e)
	}
	for _, r := range e.Connections {
		if r.Allowed || r.Reason != "not on the egress grant" || r.Up != 0 || r.Address != "" {
			t.Errorf("record %+v", r)
		}
	}
	ds := d.get()
	want := wire.Denial{Effect: wire.EffectConnect, Call: "connect", Object: other.entry(), Rule: wire.RuleNotOnLease, Source: wire.SourceBroker, Count: 1}
	if len(ds) != 3 || ds[0] != want || ds[1] != want || ds[2].Object != "LOCALHOST:"+fmt.Sprint(granted.port()) {
		t.Errorf("denials %+v, want 3 like %+v", ds, want)
	}
}

// TestNotProxyRequest: a request that names no destination the proxy
// carries is refused and recorded, without a denial (it names no
// connection); a connection that sends nothing is not counted.
func TestNotProxyRequest(t *testing.T) {
	p := newProxy(t)
	var d denials
	s := p.Open("lease-12", nil, d.add)
	for _, req := range []string{
		"GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET https://example.com/ HTTP/1.1\r\n\r\n",
		"GET http://example.com/ HTTP/1.1\r\nX: " + strings.Repeat("a", maxHead) + "\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
	} {
		c := dial(t, s)
		io.WriteString(c, req)
		c.CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%.40q: %v", req, err)
		}
		if resp.StatusCode != 403 || resp.Header.Get("X-Warrant-Refused") != "not-a-proxy-request" {
			t.Errorf("%.40q: %s %v", req, resp.Status, resp.Header)
		}
	}
	dial(t, s).Close()
	settle(t, s, nil)
	e := s.Close()
	if e.Total != 4 || e.Refused != 4 || len(d.get()) != 0 {
		t.Errorf("egress %+v, denials %v", e, d.get())
	}
	if r := e.Connections[2]; !strings.Contains(r.Reason, "longer than") || r.Host != "" {
		t.Errorf("record %+v", r)
	}
}

// TestRefusedPrivateName: a granted name that resolves to an internal
// address (DNS rebinding) is refused; the origin at that address gets
// nothing. The same address granted as a literal is reached.
func TestRefusedPrivateName(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	p.resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::ffff:10.1.2.3"),
			netip.MustParseAddr("64:ff9b::a9fe:a9fe"), netip.MustParseAddr("fd00:ec2::254")}, nil
	}
	var d denials
	name := fmt.Sprintf("registry.test:%d", o.port())
	s := p.Open("lease-5", []string{name}, d.add)
	c := dial(t, s)
	resp, _ := connectTo(t, c, name)
	if resp.StatusCode != 403 || resp.Header.Get("X-Warrant-Refused") != "private-address" {
		t.Errorf("CONNECT %s: %s %v", name, resp.Status, resp.Header)
	}
	settle(t, s, nil)
	e := s.Close()
	if o.accepted.Load() != 0 {
		t.Errorf("the origin accepted %d connections", o.accepted.Load())
	}
	if e.Total != 1 || e.Refused != 1 || e.Totals[0].Connections != 1 || !strings.Contains(e.Connections[0].Reason, "127.0.0.1") {
		t.Errorf("egress %+v", e)
	}
	if ds := d.get(); len(ds) != 1 || ds[0].Rule != wire.RulePrivateAddress || ds[0].Object != name {
		t.Errorf("denials %+v", ds)
	}
}

// TestUnadmitted: a connection to the proxy from an address no session
// admitted gets not a byte, and nothing reaches the origin.
func TestUnadmitted(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	s := p.Open("lease-6", []string{o.entry()}, nil)
	c, err := net.Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", o.entry())
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("an unadmitted client read %d bytes, %v", n, err)
	}
	e := s.Close()
	if o.accepted.Load() != 0 || e.Total != 0 {
		t.Errorf("the origin accepted %d connections; egress %+v", o.accepted.Load(), e)
	}
}

// TestCloseEndsTunnels: closing the session closes a tunnel still open,
// and its record is complete.
func TestCloseEndsTunnels(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	s := p.Open("lease-7", []string{o.entry()}, nil)
	c := dial(t, s)
	resp, br := connectTo(t, c, o.entry())
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	fmt.Fprintf(c, "GET /open HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatal(resp, err)
	} else if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	done := make(chan *wire.Egress)
	go func() { done <- s.Close() }()
	var e *wire.Egress
	select {
	case e = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a tunnel open")
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("the tunnel is still open after Close")
	}
	if r := e.Connections[0]; e.Total != 1 || !r.Allowed || r.End < r.Start || r.Up == 0 || r.Down == 0 {
		t.Errorf("egress %+v", e)
	}
}

// TestProxyClose: closing the proxy ends its sessions' connections and
// refuses new ones; a session opened after is closed.
func TestProxyClose(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	s := p.Open("lease-10", []string{o.entry()}, nil)
	c := dial(t, s)
	if resp, _ := connectTo(t, c, o.entry()); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("a tunnel is open after the proxy closed")
	}
	if _, err := admittedDialer(s).Dial("tcp4", p.Addr().String()); err == nil {
		t.Error("the proxy accepted a connection after it closed")
	}
	late := p.Open("lease-11", nil, nil)
	late.Admit(netip.MustParseAddrPort("127.0.0.1:1"))
	if e := late.Close(); e.Total != 0 || len(p.admitted) != 0 {
		t.Errorf("a late session: %+v, %d admitted", e, len(p.admitted))
	}
	if e := s.Close(); e.Total != 1 || !e.Connections[0].Allowed {
		t.Errorf("egress %+v", e)
	}
}

// TestFlood: 10,000 refused CONNECTs are all counted, the records stay
// within the cap, and each is a denial.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("skip: -short; the flood makes 10,000 connections")
	}
	p := newProxy(t)
	var d denials
	s := p.Open("lease-8", []string{"registry.npmjs.org:443"}, d.add)
	const n, workers = 10000, 8
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := w; i < n; i += workers {
				c, err := admittedDialer(s).Dial("tcp4", s.Proxy().String())
				if err != nil {
					errs <- err
					return
				}
				fmt.Fprintf(c, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n", 1+i%65535)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				c.Close()
				if err != nil || resp.StatusCode != 403 {
					errs <- fmt.Errorf("%d: %v %v", i, resp, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	settle(t, s, nil)
	e := s.Close()
	if e.Total != n || e.Refused != n || len(e.Connections) != wire.MaxConnections || len(d.get()) != n {
		t.Errorf("total %d, refused %d, %d records, %d denials", e.Total, e.Refused, len(e.Connections), len(d.get()))
	}
}

func sorted(a, b string) []string {
	if a > b {
		return []string{b, a}
	}
	return []string{a, b}
}
