package wire

import (
	"net/netip"
	"strings"
	"testing"
)

// TestParseEgressEntry: each destination has one spelling; every other
// spelling of it, and whatever is not a destination, is refused.
func TestParseEgressEntry(t *testing.T) {
	for in, want := range map[string]string{
		"registry.npmjs.org:443":   "registry.npmjs.org:443",
		"Registry.NPMjs.org:443":   "registry.npmjs.org:443",
		"xn--bcher-kva.example:80": "xn--bcher-kva.example:80",
		"a-b.c0:65535":             "a-b.c0:65535",
		"127.0.0.1:4873":           "127.0.0.1:4873",
		"[2001:db8::1]:443":        "[2001:db8::1]:443",
		"[::1]:1":                  "[::1]:1",
	} {
		got, err := ParseEgressEntry(in)
		if err != nil || got != want {
			t.Errorf("ParseEgressEntry(%q) = %q, %v; want %q", in, got, err, want)
		}
		if _, _, err := SplitEgressEntry(got); err != nil {
			t.Errorf("SplitEgressEntry(%q): %v", got, err)
		}
	}
	for _, in := range []string{
		"*.npmjs.org:443",         // wildcard
		"registry.npmjs.org.:443", // trailing dot
		"0x7f.1:80",               // a number in hex a resolver reads as 127.0.0.1
		"127.1:80",                // the short form of 127.0.0.1
		"127.000.0.1:80",          // leading zeros
		"2130706433.com.1:80",     // last label all digits
		"[::ffff:127.0.0.1]:80",   // IPv4-mapped
		"[fe80::1%eth0]:80",       // a zone
		"[2001:DB8::1]:443",       // not canonical
		"[127.0.0.1]:80",          // IPv4 in brackets
		"::1:80",                  // IPv6 without brackets
		"example.com:0", "example.com:65536", "example.com:080", "example.com:+80", "example.com:", "example.com",
		"localhost:80", ":443", // single label, none
		"exa_mple.com:443", "bücher.example:443", "-a.example:443", "a-.example:443", "a..b:443", "exa mple.com:443",
		strings.Repeat("a", 64) + ".example:443", strings.Repeat("a.", 127) + "ab:443",
	} {
		if got, err := ParseEgressEntry(in); err == nil {
			t.Errorf("ParseEgressEntry(%q) = %q; want a refusal", in, got)
		}
	}
	if _, _, err := SplitEgressEntry("Example.com:443"); err == nil {
		t.Error("SplitEgressEntry accepted an entry that is not canonical")
	}
}

// TestEgressAskedOnTheWire: a submit may ask in any accepted spelling
// and by preset name; anything else is refused at decoding.
func TestEgressAskedOnTheWire(t *testing.T) {
	ask := func(list ...string) []byte {
		s := &Submit{Workspace: "/w", Request: sampleRequest()}
		s.Request.Egress = list
		return rawEncode(t, s)
	}
	mustAccept(t, "entries and presets", ask("npm", "go-1", "Registry.npmjs.org:443", "127.0.0.1:4873"), AgentChannel)
	for name, c := range map[string]struct {
		list    []string
		pattern string
	}{
		"wildcard":       {[]string{"*.example.com:443"}, `egress\[0\]: egress entry .*no wildcards`},
		"trailing dot":   {[]string{"npm", "example.com.:443"}, `egress\[1\]: egress entry .*trailing dot`},
		"short IPv4":     {[]string{"127.1:80"}, `egress\[0\]: .*neither a host name nor an IPv4 address`},
		"hex IPv4":       {[]string{"0x7f.1:80"}, `egress\[0\]: .*neither a host name nor an IPv4 address`},
		"mapped":         {[]string{"[::ffff:127.0.0.1]:80"}, `egress\[0\]: .*canonical form`},
		"zone":           {[]string{"[fe80::1%eth0]:80"}, `egress\[0\]: .*canonical form`},
		"port 0":         {[]string{"example.com:0"}, `egress\[0\]: .*1 to 65535`},
		"port 65536":     {[]string{"example.com:65536"}, `egress\[0\]: .*1 to 65535`},
		"leading zero":   {[]string{"example.com:0443"}, `egress\[0\]: .*1 to 65535`},
		"single label":   {[]string{"localhost:80"}, `egress\[0\]: .*needs a domain`},
		"preset spelled": {[]string{"Npm"}, `egress\[0\]: "Npm" is neither host:port nor a preset name`},
		"empty":          {[]string{""}, `egress\[0\]: "" is neither`},
		"33":             {strings.Split(strings.Repeat("npm,", MaxEgress+1), ",")[:MaxEgress+1], `egress: 33 entries exceeds the cap of 32$`},
		"long":           {[]string{strings.Repeat("a", 260)}, `egress\[0\]: 260 bytes exceeds the cap of 259$`},
	} {
		mustReject(t, name, ask(c.list...), AgentChannel, c.pattern)
	}
	if !EgressPreset("npm") || !EgressPreset("go-mod2") || EgressPreset("2go") || EgressPreset("-a") || EgressPreset(strings.Repeat("a", 33)) {
		t.Error("EgressPreset: wrong spelling rule")
	}
}

// TestIdentityEgressIsCanonical: an identity, and an approval's list,
// hold each entry once, canonical, sorted; approve's list goes with
// set_egress only.
func TestIdentityEgressIsCanonical(t *testing.T) {
	withEgress := func(list ...string) []byte {
		v := sampleApproval(false)
		v.Identity.Egress = list
		return rawEncode(t, &ApprovalRequired{Request: v})
	}
	mustAccept(t, "sorted", withEgress("127.0.0.1:4873", "registry.npmjs.org:443"), ReplyChannel)
	mustReject(t, "unsorted", withEgress("registry.npmjs.org:443", "127.0.0.1:4873"), ReplyChannel, `egress: not sorted, or an entry twice$`)
	mustReject(t, "twice", withEgress("a.example:1", "a.example:1"), ReplyChannel, `egress: not sorted, or an entry twice$`)
	mustReject(t, "not canonical", withEgress("A.example:1"), ReplyChannel, `egress\[0\]: .*not canonical`)
	mustReject(t, "a preset", withEgress("npm"), ReplyChannel, `egress\[0\]: egress entry "npm": want host:port$`)

	approve := func(set bool, list ...string) []byte {
		return rawEncode(t, &Approve{RequestID: "apr-1", Uses: 1, TTLSeconds: 1, SetEgress: set, Egress: list})
	}
	mustAccept(t, "set", approve(true, "proxy.golang.org:443", "sum.golang.org:443"), OperatorChannel)
	mustAccept(t, "set none", approve(true), OperatorChannel)
	mustReject(t, "not set", approve(false, "proxy.golang.org:443"), OperatorChannel, `egress without set_egress`)
	mustReject(t, "unsorted", approve(true, "sum.golang.org:443", "proxy.golang.org:443"), OperatorChannel, `not sorted`)
	mustReject(t, "preset", approve(true, "go"), OperatorChannel, `want host:port$`)
}

// TestResultEgressBounds: a result's egress record keeps its caps, and
// its counts agree: it claims no more than the proxy could have counted.
func TestResultEgressBounds(t *testing.T) {
	status := func(edit func(*Egress)) []byte {
		r := sampleEgressResult()
		edit(r.Egress)
		return rawEncode(t, &Status{Handle: "act-1", State: StateTerminal, Result: r})
	}
	mustAccept(t, "sample", status(func(*Egress) {}), ReplyChannel)
	mustAccept(t, "at the cap", status(func(e *Egress) {
		e.Connections, e.Total, e.Refused = make([]EgressConnection, MaxConnections), 1<<20, MaxConnections
	}), ReplyChannel)
	for name, c := range map[string]struct {
		edit    func(*Egress)
		pattern string
	}{
		"257 connections":   {func(e *Egress) { e.Connections = make([]EgressConnection, MaxConnections+1) }, `egress.connections: 257 entries exceeds the cap of 256$`},
		"33 totals":         {func(e *Egress) { e.Totals = make([]EgressTotal, MaxEgress+1) }, `egress.totals: 33 entries exceeds the cap of 32$`},
		"total of a name":   {func(e *Egress) { e.Totals[0].Entry = "npm" }, `egress.totals\[0\].entry: `},
		"no grant":          {func(e *Egress) { e.Granted = nil }, `egress.granted: empty$`},
		"long host":         {func(e *Egress) { e.Connections[1].Host = strings.Repeat("h", 257) }, `egress.connections\[1\].host: 257 bytes exceeds the cap of 256$`},
		"long sni":          {func(e *Egress) { e.Connections[0].SNI = strings.Repeat("s", 257) }, `egress.connections\[0\].sni: 257 bytes exceeds the cap of 256$`},
		"bad reason":        {func(e *Egress) { e.Connections[1].Reason = "\xff" }, `invalid UTF-8`},
		"refused past all":  {func(e *Egress) { e.Refused = 3 }, `egress: 3 refused and 2 listed of 2 connections$`},
		"listed past total": {func(e *Egress) { e.Total = 1 }, `egress: 1 refused and 2 listed of 1 connections$`},
		"entry past total":  {func(e *Egress) { e.Totals[0].Connections = 3 }, `egress: the granted entries count more than the 2 connections$`},
		"refusals unsaid":   {func(e *Egress) { e.Connections[0].Allowed = false }, `egress: 2 of 2 listed connections refused, against 1 of 2 counted$`},
		"allowed unsaid":    {func(e *Egress) { e.Refused = 2 }, `egress: 1 of 2 listed connections refused, against 2 of 2 counted$`},
		"entry not granted": {func(e *Egress) { e.Totals[0].Entry = "registry.yarnpkg.com:443" }, `egress: a total for registry.yarnpkg.com:443, which is not granted$`},
	} {
		mustReject(t, name, status(c.edit), ReplyChannel, c.pattern)
	}
}

// TestEgressLocal: the card's "(a local address)" is every literal no
// public host has.
func TestEgressLocal(t *testing.T) {
	for _, e := range []string{"127.0.0.1:4873", "10.1.2.3:80", "172.16.0.1:80", "192.168.1.1:80", "169.254.169.254:80",
		"100.64.0.1:80", "0.0.0.0:80", "192.0.0.192:80", "255.255.255.255:80", "224.0.0.1:80",
		"[::1]:80", "[::]:80", "[fe80::1]:80", "[fd00:ec2::254]:80", "[ff02::1]:80", "[64:ff9b::7f00:1]:80", "[2002:7f00:1::]:80"} {
		if !EgressLocal(e) {
			t.Errorf("EgressLocal(%q) = false", e)
		}
	}
	for _, e := range []string{"8.8.8.8:53", "[2001:4860:4860::8888]:443", "[64:ff9b::808:808]:53", "registry.npmjs.org:443", "localhost.example:80"} {
		if EgressLocal(e) {
			t.Errorf("EgressLocal(%q) = true", e)
		}
	}
	if !EgressLocalAddr(netip.MustParseAddr("::ffff:127.0.0.1")) {
		t.Error("EgressLocalAddr: an IPv4-mapped loopback address is not local")
	}
}
