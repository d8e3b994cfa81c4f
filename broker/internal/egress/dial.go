package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"warrant/wire"
)

// refusal is a destination a rule refuses, and why in words.
type refusal struct {
	rule   wire.DenialRule
	reason string
}

// maxAddrs bounds the addresses of a name the proxy tries.
const maxAddrs = 8

// connect connects to a granted entry: a literal address as it is; a
// name by the addresses the broker resolves it to, those that reach this
// host or its networks left out (addresses), each tried in turn (dialAny).
func (p *Proxy) connect(ctx context.Context, entry string) (*net.TCPConn, netip.AddrPort, *refusal, error) {
	host, port, err := wire.SplitEgressEntry(entry)
	if err != nil {
		panic("egress: internal error: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	addrs, ref, err := p.addresses(ctx, entry, host)
	if ref != nil || err != nil {
		return nil, netip.AddrPort{}, ref, err
	}
	_, literal := wire.EgressLiteral(entry)
	return dialAny(ctx, host, addrs, port, !literal)
}

// addresses returns the addresses to try for entry: a literal's own;
// a name's, without those wire.EgressLocalAddr holds and this host's own
// (hostAddrs: a service bound to 0.0.0.0 or [::] answers on each), and
// refused (rule private-address) when none is left.
func (p *Proxy) addresses(ctx context.Context, entry, host string) ([]netip.Addr, *refusal, error) {
	if a, ok := wire.EgressLiteral(entry); ok {
		return []netip.Addr{a}, nil, nil // granted as itself, whatever it is
	}
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	all, err := p.resolve(rctx, host)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	own, err := hostAddrs()
	if err != nil {
		return nil, nil, err
	}
	var addrs []netip.Addr
	for _, a := range all {
		if !wire.EgressLocalAddr(a) && !slices.Contains(own, a.Unmap()) && len(addrs) < maxAddrs {
			addrs = append(addrs, a.Unmap())
		}
	}
	switch {
	case len(addrs) > 0:
		return addrs, nil, nil
	case len(all) == 0:
		return nil, nil, fmt.Errorf("resolve %s: no address", host)
	}
	return nil, &refusal{wire.RulePrivateAddress, fmt.Sprintf("%s resolved to an internal address (%s), which only a grant of that literal address may reach", host, all[0])}, nil
}

// hostAddrs is this host's interface addresses, as they are now: read at
// each name's resolving, since interfaces come and go.
func hostAddrs() ([]netip.Addr, error) {
	list, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list this host's addresses: %w", err)
	}
	var own []netip.Addr
	for _, a := range list {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				own = append(own, ip.Unmap())
			}
		}
	}
	return own, nil
}

// dialAny connects to the first of addrs that answers on port. For a
// name (named), a connection whose two ends have one address reached
// this host itself (by an address it gained after addresses listed its
// own), and is closed and refused (rule private-address) before a byte.
func dialAny(ctx context.Context, host string, addrs []netip.Addr, port uint16, named bool) (*net.TCPConn, netip.AddrPort, *refusal, error) {
	d := net.Dialer{Timeout: dialTimeout}
	var err error
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, port)
		var c net.Conn
		if c, err = d.DialContext(ctx, "tcp", ap.String()); err != nil {
			continue
		}
		tc := c.(*net.TCPConn)
		if local := tc.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap(); named && local == a.Unmap() {
			tc.Close()
			return nil, netip.AddrPort{}, &refusal{wire.RulePrivateAddress, fmt.Sprintf("%s resolved to %s, an address of this host, which only a grant of that literal address may reach", host, a)}, nil
		}
		return tc, ap, nil, nil
	}
	return nil, netip.AddrPort{}, nil, err
}
