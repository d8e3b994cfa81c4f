package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"

	"warrant/wire"
)

// TestAddressesLeaveOutLocal: a name's addresses that reach this host,
// its networks or its provider (wire.EgressLocalAddr) are never tried: a
// name with only such addresses is refused (rule private-address), one
// with a public address too is tried there alone. A literal the grant
// names is tried as it is.
func TestAddressesLeaveOutLocal(t *testing.T) {
	p := newProxy(t)
	public := netip.MustParseAddr("8.8.8.8")
	for _, s := range []string{
		"127.0.0.1", "127.255.0.9", "0.0.0.0", "0.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "100.127.255.254", "192.0.0.170", "198.18.0.1", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "fe80::1", "fe80::1%eth0", "fd00:ec2::254", "fc00::1", "fec0::1", "ff02::1", "ff05::2",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::127.0.0.1", "::8.8.8.8",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "64:ff9b:1::808:808",
		"2002:7f00:1::1", "2002:808:808::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "100::1",
	} {
		a := netip.MustParseAddr(s)
		p.resolve = func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{a}, nil }
		if got, ref, err := p.addresses(context.Background(), "x.test:443", "x.test"); ref == nil || ref.rule != wire.RulePrivateAddress || err != nil {
			t.Errorf("%s: tried %v (%v, %v)", s, got, ref, err)
		}
		p.resolve = func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{a, public}, nil }
		if got, ref, err := p.addresses(context.Background(), "x.test:443", "x.test"); len(got) != 1 || got[0] != public || ref != nil || err != nil {
			t.Errorf("%s and %s: tried %v (%v, %v)", s, public, got, ref, err)
		}
	}
	for _, s := range []string{
		"8.8.8.8", "1.1.1.1", "104.16.0.1", "100.63.255.255", "100.128.0.0", "172.32.0.1", "192.0.1.1", "198.20.0.1",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2606:4700::1111", "2001:4860:4860::8888",
	} {
		a := netip.MustParseAddr(s)
		p.resolve = func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{a}, nil }
		if got, ref, err := p.addresses(context.Background(), "x.test:443", "x.test"); len(got) != 1 || got[0] != a.Unmap() || ref != nil || err != nil {
			t.Errorf("%s: tried %v (%v, %v)", s, got, ref, err)
		}
	}
	if got, ref, err := p.addresses(context.Background(), "127.0.0.1:4873", "127.0.0.1"); len(got) != 1 || ref != nil || err != nil {
		t.Errorf("a granted literal: tried %v (%v, %v)", got, ref, err)
	}
}

// TestRefusedOwnAddress: a granted name that resolves to one of this
// host's own addresses, where a host service listens on every address
// (0.0.0.0), is refused (rule private-address) and the service gets no
// connection; the documentation ranges are refused like the private ones.
func TestRefusedOwnAddress(t *testing.T) {
	ln, err := net.Listen("tcp", ":0") // a host service on every address
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	own, err := hostAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"192.0.2.1", "198.51.100.7", "203.0.113.9", "2001:db8::1", "168.63.129.16"} {
		own = append(own, netip.MustParseAddr(s))
	}
	p := newProxy(t)
	var d denials
	entry := fmt.Sprintf("mirror.example.com:%d", port)
	s := p.Open("lease-o", []string{entry}, d.add)
	for _, a := range own {
		p.resolve = func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{a}, nil }
		c := dial(t, s)
		if resp, _ := connectTo(t, c, entry); resp.StatusCode != 403 || resp.Header.Get("X-Warrant-Refused") != "private-address" {
			t.Errorf("%s resolved to %s: %s %v", entry, a, resp.Status, resp.Header)
		}
		c.Close()
	}
	settle(t, s, nil)
	if e := s.Close(); e.Refused != uint64(len(own)) || len(d.get()) != len(own) || accepted.Load() != 0 {
		t.Errorf("egress %+v, denials %v, the host service accepted %d", e, d.get(), accepted.Load())
	}
}

// TestDialRefusesThisHost: a name's connection that turns out to reach
// this host itself (its two ends one address) is refused; a literal
// granted as such is connected.
func TestDialRefusesThisHost(t *testing.T) {
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	addrs := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	c, _, ref, err := dialAny(context.Background(), "mirror.example.com", addrs, port, true)
	if c != nil || ref == nil || ref.rule != wire.RulePrivateAddress || err != nil {
		t.Errorf("a name: connected %v (%v, %v)", c, ref, err)
	}
	c, _, ref, err = dialAny(context.Background(), "127.0.0.1", addrs, port, false)
	if c == nil || ref != nil || err != nil {
		t.Fatalf("a literal: %v, %v", ref, err)
	}
	c.Close()
}
