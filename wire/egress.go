package wire

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Bounds of egress: MaxEgress entries in a grant; MaxConnections
// connection records in a result or receipt (the first ones, as samples:
// Total and the per-entry Totals stay exact).
const (
	MaxEgress      = 32
	MaxConnections = 256
)

// ParseEgressEntry parses one grant entry, "host:port", and returns it in
// its one canonical spelling. The host is a DNS name (at least two labels,
// letters, digits and hyphens, no wildcard, no trailing dot, the last
// label not all digits) compared without case, or an IP address literal
// in its canonical form (dotted quad; an IPv6 address in brackets, never
// IPv4-mapped, never with a zone). The port is 1 to 65535 in decimal
// without leading zeros. Anything else is refused: every spelling of one
// destination but this one would be a second name for it on a card.
func ParseEgressEntry(s string) (string, error) {
	host, port, err := splitEgress(s)
	if err != nil {
		return "", fmt.Errorf("egress entry %q: %w", s, err)
	}
	return joinEgress(host, port), nil
}

// SplitEgressEntry returns the host and port of a canonical entry.
func SplitEgressEntry(s string) (host string, port uint16, err error) {
	host, port, err = splitEgress(s)
	if err != nil {
		return "", 0, fmt.Errorf("egress entry %q: %w", s, err)
	}
	if c := joinEgress(host, port); c != s {
		return "", 0, fmt.Errorf("egress entry %q: not canonical (%q)", s, c)
	}
	return host, port, nil
}

// EgressLiteral returns the address of a canonical entry whose host is
// an IP literal.
func EgressLiteral(entry string) (netip.Addr, bool) {
	host, _, err := splitEgress(entry)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	return a, err == nil
}

func splitEgress(s string) (string, uint16, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("want host:port")
	}
	host, ps := s[:i], s[i+1:]
	p, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || p == 0 || strconv.FormatUint(p, 10) != ps {
		return "", 0, fmt.Errorf("port %q is not a number from 1 to 65535", ps)
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" || "["+a.String()+"]" != host {
			return "", 0, fmt.Errorf("%q is not an IPv6 address in its canonical form", host)
		}
		return a.String(), uint16(p), nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if !a.Is4() || a.String() != host {
			return "", 0, fmt.Errorf("%q: an IPv6 address goes in brackets", host)
		}
		return host, uint16(p), nil
	}
	return host, uint16(p), checkEgressName(host)
}

func checkEgressName(h string) error {
	lower := strings.ToLower(h)
	if len(h) > 253 {
		return fmt.Errorf("host name longer than 253 bytes")
	}
	labels := strings.Split(lower, ".")
	if len(labels) < 2 {
		return fmt.Errorf("%q: a host name needs a domain (a single label is resolved by search rules, not by its name)", h)
	}
	for _, l := range labels {
		if l == "" {
			return fmt.Errorf("%q: empty label (a trailing dot is refused)", h)
		}
		if len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' ||
			strings.ContainsFunc(l, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') }) {
			return fmt.Errorf("%q: label %q is not letters, digits and inner hyphens (no wildcards)", h, l)
		}
	}
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		return fmt.Errorf("%q is neither a host name nor an IPv4 address in dotted-quad form", h)
	}
	return nil
}

func joinEgress(host string, port uint16) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		host = "[" + host + "]"
	}
	return strings.ToLower(host) + ":" + strconv.FormatUint(uint64(port), 10)
}

// checkEgress checks a grant: at most MaxEgress canonical entries,
// sorted, each once.
func checkEgress(field string, list []string) error {
	if len(list) > MaxEgress {
		return fmt.Errorf("%s: %d entries exceeds the cap of %d", field, len(list), MaxEgress)
	}
	for i, e := range list {
		if err := at(checkEgressEntry("", e), field, i); err != nil {
			return err
		}
	}
	if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
		return fmt.Errorf("%s: not sorted, or an entry twice", field)
	}
	return nil
}

// checkEgressEntry requires one canonical entry.
func checkEgressEntry(field, e string) error {
	if err := checkText(field, e, MaxEgressEntry); err != nil {
		return err
	}
	if _, _, err := SplitEgressEntry(e); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}

// MaxEgressEntry bounds an entry, and an item of an asked list: a host
// name of 253 bytes, ":", a port.
const MaxEgressEntry = 253 + len(":65535")

// maxEgressPreset bounds a preset name.
const maxEgressPreset = 32

// EgressPreset reports whether s is spelled as a preset name: a
// lower-case letter, then lower-case letters, digits and hyphens, at most
// 32 bytes. No entry is (an entry has a colon).
func EgressPreset(s string) bool {
	return s != "" && len(s) <= maxEgressPreset && s[0] >= 'a' && s[0] <= 'z' &&
		!strings.ContainsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') })
}

// CheckEgressAsked checks what a request asks for (ActionRequest.Egress):
// at most MaxEgress items, each an entry ParseEgressEntry takes (in any
// spelling it accepts) or a preset name. Which presets exist, and the
// exact list they make, is the broker's to say.
func CheckEgressAsked(list []string) error {
	if len(list) > MaxEgress {
		return fmt.Errorf("egress: %d entries exceeds the cap of %d", len(list), MaxEgress)
	}
	for i, s := range list {
		field := fmt.Sprintf("egress[%d]", i)
		if err := checkText(field, s, MaxEgressEntry); err != nil {
			return err
		}
		if EgressPreset(s) {
			continue
		}
		if !strings.Contains(s, ":") {
			return fmt.Errorf("%s: %q is neither host:port nor a preset name (a lower-case letter, then lower-case letters, digits and hyphens)", field, s)
		}
		if _, err := ParseEgressEntry(s); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	return nil
}

// Address ranges no public host has, beyond what netip.Addr's own
// predicates (loopback, private, link-local, multicast, unspecified)
// cover.
var localRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),        // "this network": 0.x.y.z reaches the host itself
	netip.MustParsePrefix("100.64.0.0/10"),    // carrier-grade NAT, often a cloud's internal range
	netip.MustParsePrefix("192.0.0.0/24"),     // IETF protocol assignments (NAT64 discovery, DS-Lite)
	netip.MustParsePrefix("198.18.0.0/15"),    // benchmarking; fake-IP DNS of local proxies
	netip.MustParsePrefix("240.0.0.0/4"),      // reserved, and 255.255.255.255 broadcast
	netip.MustParsePrefix("::/96"),            // IPv4-compatible (deprecated): a second spelling of IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),   // local-use NAT64 (RFC 8215): a translator of the site's own
	netip.MustParsePrefix("2001::/32"),        // Teredo: an IPv4 server and client within
	netip.MustParsePrefix("2002::/16"),        // 6to4: an IPv4 address within
	netip.MustParsePrefix("fec0::/10"),        // deprecated site-local
	netip.MustParsePrefix("100::/64"),         // discard-only
	netip.MustParsePrefix("192.0.2.0/24"),     // documentation (TEST-NET-1): no public host; often a lab's own network
	netip.MustParsePrefix("198.51.100.0/24"),  // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),   // documentation (TEST-NET-3)
	netip.MustParsePrefix("2001:db8::/32"),    // documentation (IPv6)
	netip.MustParsePrefix("168.63.129.16/32"), // Azure's host service (DNS, DHCP, the VM agent's wire server): a provider's, as 169.254.169.254
}

// nat64 is the well-known NAT64 prefix: IPv4 in the last 32 bits.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// EgressLocalAddr reports whether a reaches this host, its networks or
// its provider's services rather than the public internet: loopback,
// private (RFC 1918, unique-local), link-local (the cloud metadata
// services 169.254.169.254 and fd00:ec2::254 among them), carrier-grade
// NAT, unspecified, multicast, broadcast, reserved and documentation
// ranges (which labs and test hosts use as their own), Azure's host
// service address, and IPv6
// forms that carry such an IPv4 address (mapped, NAT64) or any IPv4
// address at all (compatible, 6to4, Teredo, local NAT64), since what
// they reach is decided by a translator, not by the address. The proxy
// never connects to one for a name; only a grant that lists the literal
// reaches it, and the card marks that entry "(a local address)".
func EgressLocalAddr(a netip.Addr) bool {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	if !a.IsValid() || a.Zone() != "" || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range localRanges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// EgressLocal reports whether a canonical entry names an address
// literal EgressLocalAddr holds: what the card marks "(a local address)".
func EgressLocal(entry string) bool {
	a, ok := EgressLiteral(entry)
	return ok && EgressLocalAddr(a)
}

// EgressConnection is one connection a target asked the broker's proxy
// for: the destination it named, and what became of it.
type EgressConnection struct {
	// Host and Port are the destination the client named (a CONNECT's
	// authority or an absolute URL's): in a grant's canonical spelling
	// when it is one; otherwise the authority as given (DenialObject's
	// escapes, cut past 256 bytes) and port 0; "" and 0 for a request
	// that named none.
	Host string `cbor:"host" json:"host"`
	Port uint16 `cbor:"port" json:"port"`
	// Address is the address the proxy connected to (resolved by the
	// broker, never by the target); empty when refused before that.
	Address string `cbor:"address,omitempty" json:"address,omitempty"`
	// SNI is the server name the client's TLS ClientHello carried, if any.
	SNI   string `cbor:"sni,omitempty" json:"sni,omitempty"`
	Up    uint64 `cbor:"up" json:"up"`     // bytes the proxy wrote to the upstream
	Down  uint64 `cbor:"down" json:"down"` // bytes the proxy read from the upstream
	Start int64  `cbor:"start_unix_ns" json:"start_unix_ns"`
	End   int64  `cbor:"end_unix_ns" json:"end_unix_ns"`
	// Allowed says the proxy connected it; Reason says why not, in words.
	Allowed bool   `cbor:"allowed" json:"allowed"`
	Reason  string `cbor:"reason,omitempty" json:"reason,omitempty"`
}

// EgressTotal sums an action's connections to one granted entry.
type EgressTotal struct {
	Entry       string `cbor:"entry" json:"entry"`
	Connections uint64 `cbor:"connections" json:"connections"`
	Up          uint64 `cbor:"up" json:"up"`
	Down        uint64 `cbor:"down" json:"down"`
}

// Egress is what an action with an egress grant did with it: the grant,
// every connection counted (Total, Refused; Totals per granted entry,
// exact) and the first MaxConnections listed.
type Egress struct {
	Granted     []string           `cbor:"granted" json:"granted"`
	Total       uint64             `cbor:"total" json:"total"`
	Refused     uint64             `cbor:"refused" json:"refused"`
	Totals      []EgressTotal      `cbor:"totals,omitempty" json:"totals,omitempty"`
	Connections []EgressConnection `cbor:"connections,omitempty" json:"connections,omitempty"`
}

// Validate checks an egress record: its bounds — its grant (never
// empty), at most MaxEgress totals, each for a canonical entry, and at
// most MaxConnections connections, each text within its cap (a host and
// an SNI as a client sent them must be cut and made valid UTF-8 without
// NUL by whoever records them) — and that its counts agree: totals only
// for granted entries, no more refused, listed or per-entry connections
// than the total, no more listed refusals than refused ones, and no more
// listed allowed connections than allowed ones. A result and a receipt
// (receipt.Egress) are both checked here.
func (e *Egress) Validate() error {
	err := checkEgress("egress.granted", e.Granted)
	if err == nil && len(e.Granted) == 0 {
		err = fmt.Errorf("egress.granted: empty")
	}
	if err == nil {
		err = firstErr(checkLen("egress.totals", len(e.Totals), MaxEgress), checkLen("egress.connections", len(e.Connections), MaxConnections))
	}
	for i := 0; err == nil && i < len(e.Totals); i++ {
		err = at(checkEgressEntry(".entry", e.Totals[i].Entry), "egress.totals", i)
	}
	for i := 0; err == nil && i < len(e.Connections); i++ {
		c := &e.Connections[i]
		err = at(firstErr(checkText(".host", c.Host, maxName), checkText(".address", c.Address, maxName),
			checkText(".sni", c.SNI, maxName), checkText(".reason", c.Reason, maxText)), "egress.connections", i)
	}
	if err == nil {
		err = e.checkCounts()
	}
	return err
}

// checkCounts checks that e's counts agree (Validate).
func (e *Egress) checkCounts() error {
	var perEntry uint64
	for _, t := range e.Totals {
		if !slices.Contains(e.Granted, t.Entry) {
			return fmt.Errorf("egress: a total for %s, which is not granted", t.Entry)
		}
		if t.Connections > e.Total-perEntry {
			return fmt.Errorf("egress: the granted entries count more than the %d connections", e.Total)
		}
		perEntry += t.Connections
	}
	var refused uint64
	for _, c := range e.Connections {
		if !c.Allowed {
			refused++
		}
	}
	listed := uint64(len(e.Connections))
	switch {
	case e.Refused > e.Total || listed > e.Total:
		return fmt.Errorf("egress: %d refused and %d listed of %d connections", e.Refused, listed, e.Total)
	case refused > e.Refused || listed-refused > e.Total-e.Refused:
		return fmt.Errorf("egress: %d of %d listed connections refused, against %d of %d counted", refused, listed, e.Refused, e.Total)
	}
	return nil
}
