package egress

import (
	"net/netip"

	"warrant/wire"
)

// Address ranges the proxy never connects to for a name, beyond what
// netip.Addr's own predicates (loopback, private, link-local, multicast,
// unspecified) cover.
var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")      // "this network": 0.x.y.z reaches the host itself
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")  // carrier-grade NAT, often a cloud's internal range
	ietf        = netip.MustParsePrefix("192.0.0.0/24")   // IETF protocol assignments (NAT64 discovery, DS-Lite)
	benchmark   = netip.MustParsePrefix("198.18.0.0/15")  // benchmarking; fake-IP DNS of local proxies
	reserved4   = netip.MustParsePrefix("240.0.0.0/4")    // reserved, and 255.255.255.255 broadcast
	compat6     = netip.MustParsePrefix("::/96")          // IPv4-compatible (deprecated): a second spelling of IPv4
	nat64       = netip.MustParsePrefix("64:ff9b::/96")   // well-known NAT64: IPv4 in the last 32 bits
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48") // local-use NAT64 (RFC 8215): a translator of the site's own
	teredo      = netip.MustParsePrefix("2001::/32")      // Teredo: an IPv4 server and client within
	sixToFour   = netip.MustParsePrefix("2002::/16")      // 6to4: an IPv4 address within
	siteLocal   = netip.MustParsePrefix("fec0::/10")      // deprecated site-local
	reserved6   = netip.MustParsePrefix("100::/64")       // discard-only
)

// internal reports whether a is an address that reaches this host, its
// networks or its provider's services rather than the public internet:
// loopback, private (RFC 1918, unique-local), link-local (the cloud
// metadata services 169.254.169.254 and fd00:ec2::254 among them),
// carrier-grade NAT, unspecified, multicast, broadcast and reserved
// ranges, and IPv6 forms that carry such an IPv4 address (mapped, NAT64)
// or any IPv4 address at all (compatible, 6to4, Teredo, local NAT64),
// since what they reach is decided by a translator, not by the address.
func internal(a netip.Addr) bool {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	if !a.IsValid() || a.Zone() != "" {
		return true
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range []netip.Prefix{thisNetwork, cgnat, ietf, benchmark, reserved4,
		compat6, nat64Local, teredo, sixToFour, siteLocal, reserved6} {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Local reports whether entry is an IP literal for an address the proxy
// refuses when a name resolves to it (internal): a loopback, private,
// link-local, carrier-grade NAT, unspecified or unique-local address
// that the grant names itself. A card says so: a local registry mirror
// is a real use, and a different one from reaching the internet.
func Local(entry string) bool {
	a, ok := wire.EgressLiteral(entry)
	return ok && internal(a)
}
