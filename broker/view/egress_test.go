package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

func testEgress() *wire.Egress {
	ns := func(ms int64) int64 { return time.Unix(1_700_000_000, ms*1e6).UnixNano() }
	return &wire.Egress{Granted: []string{"127.0.0.1:4873", "registry.npmjs.org:443"}, Total: 3, Refused: 1,
		Totals: []wire.EgressTotal{{Entry: "127.0.0.1:4873"}, {Entry: "registry.npmjs.org:443", Connections: 2, Up: 1229, Down: 3565158}},
		Connections: []wire.EgressConnection{
			{Host: "registry.npmjs.org", Port: 443, Address: "104.16.1.34", SNI: "registry.npmjs.org", Up: 1200, Down: 3565000,
				Start: ns(0), End: ns(1500), Allowed: true},
			{Host: "registry.npmjs.org", Port: 443, Address: "104.16.1.34", Up: 29, Down: 158, Start: ns(1600), End: ns(1700), Allowed: true},
			{Host: "evil\x1b]0;pwned\x07.example", Port: 443, Start: ns(1800), End: ns(1800),
				Reason: "evil\x1b]0;pwned\x07.example:443 is not on lease l-1"},
		}}
}

// The run's object carries what the action did with its grant, null
// where nothing was observed; its summary says it in one line, with the
// exact counts in the object. Without a grant the member is null.
func TestActionSaysEgress(t *testing.T) {
	e := testEnding(0, nil)
	e.Status.Result.Egress = testEgress()
	a := e.Action()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"egress":{"granted":["127.0.0.1:4873","registry.npmjs.org:443"],"total":3,"refused":1,"unlisted":0,`,
		`{"entry":"registry.npmjs.org:443","connections":2,"up_bytes":1229,"down_bytes":3565158}`,
		`"address":"104.16.1.34","sni":null,"up_bytes":29,"down_bytes":158,"start":"2023-11-14T22:13:21.600000000Z"`,
		`"address":null,"sni":null,`, `"allowed":true,"reason":null}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the object does not say %s:\n%s", want, b)
		}
	}
	line := "\n  egress: 3 connections through the proxy (1 refused) · registry.npmjs.org:443 2 conn ↑1.2 KiB ↓3.4 MiB"
	if s := a.Summary(); !strings.Contains(s, line) || strings.Contains(s, "127.0.0.1:4873") {
		t.Fatalf("summary %q, want the line %q (an entry not used left out)", s, line)
	}

	none := testEnding(0, nil)
	none.Status.Result.Egress = &wire.Egress{Granted: []string{"registry.npmjs.org:443"},
		Totals: []wire.EgressTotal{{Entry: "registry.npmjs.org:443"}}}
	if s := none.Action(); !strings.HasSuffix(s.Summary(), "\n  egress: no connection through the proxy (granted registry.npmjs.org:443)") {
		t.Fatalf("unused grant: %q", s.Summary())
	}

	bare := testEnding(0, nil)
	plain := bare.Action()
	if b, _ := json.Marshal(plain); plain.Egress != nil || !strings.Contains(string(b), `"egress":null`) || strings.Contains(plain.Summary(), "egress") {
		t.Fatalf("without a grant: %s", b)
	}
}

// The network's remedies are the real commands: an agent may ask for
// exact destinations, a person approves them; a connection past the
// proxy is refused whatever is granted.
func TestEgressRemedies(t *testing.T) {
	for rule, want := range map[wire.DenialRule]string{
		wire.RuleNoNetwork:       "broker run --egress HOST:PORT -- …",
		wire.RuleNotThroughProxy: "connect through the proxy the environment names (HTTPS_PROXY); direct connections are refused",
		wire.RuleNotOnLease:      "a person approves HOST:PORT: broker approve ID --egress HOST:PORT",
		wire.RulePrivateAddress:  "grant the literal address:port itself if it is meant (a local mirror)",
	} {
		d := denialOf(&wire.Denial{Effect: wire.EffectConnect, Call: "connect", Rule: rule, Source: wire.SourceBroker, Count: 1})
		if !strings.Contains(d.Remedy, want) || !strings.HasSuffix(d.Remedy, cannotGrant) {
			t.Errorf("%s: remedy %q, want %q", rule, d.Remedy, want)
		}
	}
	d := denialOf(&wire.Denial{Effect: wire.EffectConnect, Call: "connect", Rule: wire.RuleLandlock, Source: wire.SourceKernelAudit, Count: 1})
	if !strings.Contains(d.Remedy, "broker run --egress HOST:PORT") {
		t.Errorf("a connect Landlock refused: remedy %q", d.Remedy)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1229: "1.2 KiB", 3565158: "3.4 MiB",
		5 << 30: "5.0 GiB", 1<<64 - 1: "16.0 EiB"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}
