package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"warrant/wire"
)

// requireUnserved requires c to be closed by the proxy without a byte
// after it asked for dest.
func requireUnserved(t *testing.T, c net.Conn, dest string) {
	t.Helper()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", dest)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the proxy served the connection: read %d bytes, %v", n, err)
	}
}

// TestAdmittedTwice: a source address admitted by two open sessions, or
// twice by one, is no session's: its connection is closed unread,
// nothing reaches the origin, and each session that admitted it records
// a refused attempt that says why.
func TestAdmittedTwice(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	a := p.Open("lease-a", []string{o.entry()}, nil)
	b := p.Open("lease-b", []string{o.entry()}, nil)
	for name, admit := range map[string]func(netip.AddrPort){
		"two sessions": func(l netip.AddrPort) { a.Admit(l); b.Admit(l) },
		"one, twice":   func(l netip.AddrPort) { b.Admit(l); b.Admit(l) },
	} {
		t.Run(name, func(t *testing.T) {
			c, err := boundDialer(0, admit).Dial("tcp4", p.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			requireUnserved(t, c, o.entry())
			c.Close()
		})
	}
	settle(t, a, o)
	settle(t, b, o)
	if o.accepted.Load() != 0 {
		t.Errorf("the origin accepted %d connections", o.accepted.Load())
	}
	for s, want := range map[*Session]uint64{a: 1, b: 2} {
		e := s.Close()
		if e.Total != want || e.Refused != want || e.Totals[0].Connections != 0 {
			t.Errorf("%s: egress %+v, want %d refused", s.lease, e, want)
		}
		for _, r := range e.Connections {
			if r.Allowed || !strings.Contains(r.Reason, "admitted") {
				t.Errorf("%s: record %+v", s.lease, r)
			}
		}
	}
	if len(p.admitted) != 0 {
		t.Errorf("%d admissions left", len(p.admitted))
	}
}

// TestWithdrawAdmission: an admission withdrawn (the broker's connect failed)
// takes no connection from that address; an Admit after Close makes
// none either.
func TestWithdrawAdmission(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	s := p.Open("lease-d", []string{o.entry()}, nil)
	c, err := boundDialer(0, func(l netip.AddrPort) { s.Admit(l); s.Withdraw(l) }).Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	requireUnserved(t, c, o.entry())
	c.Close()
	late := p.Open("lease-late", []string{o.entry()}, nil)
	late.Close()
	c, err = boundDialer(0, late.Admit).Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	requireUnserved(t, c, o.entry())
	c.Close()
	if e := s.Close(); e.Total != 0 || o.accepted.Load() != 0 || len(p.admitted) != 0 {
		t.Errorf("egress %+v, origin accepted %d, %d admissions left", e, o.accepted.Load(), len(p.admitted))
	}
}

// TestAdmissionExpires: an admission whose connection has not come
// within admissionLife is absent: one left behind (its socket closed
// unconnected) does not make a later admission of its address twice,
// and a connection that comes after it is no session's; neither session
// records anything of it.
func TestAdmissionExpires(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	var later atomic.Int64
	base := time.Now()
	p.now = func() time.Time { return base.Add(time.Duration(later.Load())) }
	pass := func() { later.Add(int64(admissionLife + time.Second)) }
	left := p.Open("lease-left", []string{o.entry()}, nil)
	s := p.Open("lease-s", []string{o.entry()}, nil)
	c, err := boundDialer(0, func(l netip.AddrPort) { left.Admit(l); pass(); s.Admit(l) }).Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := connectTo(t, c, o.entry()); resp.StatusCode != 200 {
		t.Errorf("a source admitted after an expired admission: %s", resp.Status)
	}
	c.Close()
	settle(t, s, o)
	c, err = boundDialer(0, func(l netip.AddrPort) { s.Admit(l); pass() }).Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	requireUnserved(t, c, o.entry())
	c.Close()
	settle(t, s, o)
	if e := left.Close(); e.Total != 0 {
		t.Errorf("%s: egress %+v", left.lease, e)
	}
	if e := s.Close(); e.Total != 1 || e.Refused != 0 || o.accepted.Load() != 1 {
		t.Errorf("%s: egress %+v, origin accepted %d", s.lease, e, o.accepted.Load())
	}
}

// TestAdmissionOnce: an admission serves exactly one connection: once
// it has closed, another from the same address and port (a host
// process that took the port) is not the session's.
func TestAdmissionOnce(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	s := p.Open("lease-o", []string{o.entry()}, nil)
	var local netip.AddrPort
	c, err := boundDialer(0, func(l netip.AddrPort) { local = l; s.Admit(l) }).Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := connectTo(t, c, o.entry()); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	c.(*net.TCPConn).SetLinger(0) // a reset: the port is free at once
	c.Close()
	settle(t, s, o)
	c, err = boundDialer(int(local.Port()), func(netip.AddrPort) {}).Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.LocalAddr().(*net.TCPAddr).AddrPort(); got != local {
		t.Fatalf("dialled from %s, not %s", got, local)
	}
	requireUnserved(t, c, o.entry())
	if e := s.Close(); e.Total != 1 || o.accepted.Load() != 1 {
		t.Errorf("egress %+v, origin accepted %d", e, o.accepted.Load())
	}
}

// TestRefusalDuringClose: a refusal the proxy is still making when the
// session closes reaches the refused callback before Close returns, and
// is in Close's record.
func TestRefusalDuringClose(t *testing.T) {
	p := newProxy(t)
	entered, release := make(chan struct{}), make(chan struct{})
	p.resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		close(entered)
		<-release // whatever the context says
		return []netip.Addr{netip.MustParseAddr("10.0.0.1")}, nil
	}
	var d denials
	s := p.Open("lease-c", []string{"registry.test:443"}, d.add)
	c := dial(t, s)
	io.WriteString(c, "CONNECT registry.test:443 HTTP/1.1\r\n\r\n")
	<-entered
	done := make(chan *wire.Egress)
	go func() { done <- s.Close() }()
	select {
	case e := <-done:
		t.Fatalf("Close returned with a request being answered: %+v", e)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	e := <-done
	if ds := d.get(); len(ds) != 1 || ds[0].Rule != wire.RulePrivateAddress || e.Refused != 1 {
		t.Errorf("denials %+v, egress %+v", ds, e)
	}
}
