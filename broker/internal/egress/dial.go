package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"

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
// name by the addresses the broker resolves it to, those that are
// internal left out (refused when none is left), each tried in turn.
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
	d := net.Dialer{Timeout: dialTimeout}
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, port)
		var c net.Conn
		if c, err = d.DialContext(ctx, "tcp", ap.String()); err == nil {
			return c.(*net.TCPConn), ap, nil, nil
		}
	}
	return nil, netip.AddrPort{}, nil, err
}

// addresses returns the addresses to try for entry.
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
	var addrs []netip.Addr
	for _, a := range all {
		if !internal(a) && len(addrs) < maxAddrs {
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
