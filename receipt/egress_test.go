package receipt

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

func testEgress() *wire.Egress {
	ns := func(s int64) int64 { return time.Unix(1_700_000_000+s, 0).UnixNano() }
	return &wire.Egress{Granted: []string{"127.0.0.1:4873", "registry.npmjs.org:443"}, Total: 3, Refused: 1,
		Totals: []wire.EgressTotal{{Entry: "registry.npmjs.org:443", Connections: 2, Up: 1187, Down: 3565158}},
		Connections: []wire.EgressConnection{
			{Host: "registry.npmjs.org", Port: 443, Address: "104.16.1.34", SNI: "registry.npmjs.org", Up: 1000, Down: 3565000,
				Start: ns(4), End: ns(5), Allowed: true},
			{Host: "registry.npmjs.org", Port: 443, Address: "104.16.1.34", Up: 187, Down: 158, Start: ns(5), End: ns(6), Allowed: true},
			{Host: "example.com", Port: 443, Start: ns(6), End: ns(6), Reason: "example.com:443 is not on lease lease-1"},
		}}
}

// A receipt with egress seals into a log that verifies, after the
// committed log of v1 receipts and beside a receipt without egress, whose
// envelope does not mention it; it decodes back to the same bytes, and
// its connections to the same record, times on the receipt clocks.
func TestReceiptCarriesEgress(t *testing.T) {
	fx, k := loadFixture(t, "log-v1.json")
	old, cps := fx.log()
	c, err := NewChain(k, old)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := c.Seal(testReceipt("r-plain", wire.Exited), testCaptured(t, Stdout, ""), testCaptured(t, Stderr, ""))
	if err != nil {
		t.Fatal(err)
	}
	r := testReceipt("r-egress", wire.Exited)
	r.Egress = EgressOf(testEgress(), wallStamp)
	e, err := c.Seal(r, testCaptured(t, Stdout, ""), testCaptured(t, Stderr, ""))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := c.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]Entry{}, old...), plain, e)
	if rep := NewVerifier(k.Public()).Verify(all, append(cps, cp), Expect{Checkpointed: true, Anchors: cps}); !rep.OK() || rep.Receipts != 4 {
		t.Fatalf("%+v", rep)
	}
	if strings.Contains(string(plain.Envelope), "egress") || checkEntry(plain.Envelope, k.Public()).receipt.Egress != nil {
		t.Fatal("a receipt without egress mentions it")
	}
	got := checkEntry(e.Envelope, k.Public()).receipt
	if got == nil || got.Egress == nil {
		t.Fatalf("the sealed receipt's egress: %+v", got)
	}
	b, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"granted":["127.0.0.1:4873","registry.npmjs.org:443"],"total":3,"refused":1`,
		`{"entry":"registry.npmjs.org:443","connections":2,"upBytes":1187,"downBytes":3565158}`,
		`"address":"104.16.1.34","sni":"registry.npmjs.org","upBytes":1000,"downBytes":3565000,"start":{"monoNs":4000000000`,
		`{"host":"example.com","port":443,"upBytes":0,"downBytes":0,`, `"allowed":false,"reason":"example.com:443 is not on lease lease-1"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the receipt does not say %s:\n%s", want, b)
		}
	}
	if back, err := DecodeReceipt(b); err != nil || !reflect.DeepEqual(back.Egress.Wire(), testEgress()) {
		t.Fatalf("decode: %v", err)
	}
}

// The receipt of an action with a grant that did not start has the grant
// alone; it claims no connection, and no egress claims more than the
// proxy could have counted.
func TestReceiptEgressClaimsNoMore(t *testing.T) {
	r := testReceipt("r1", wire.KnownNotExecuted)
	r.Egress = &Egress{Granted: []string{"registry.npmjs.org:443"}}
	if _, err := r.Encode(); err != nil {
		t.Fatalf("the grant alone, not started: %v", err)
	}
	for name, c := range map[string]struct {
		outcome wire.Outcome
		edit    func(*Egress)
	}{
		"not started":       {wire.KnownNotExecuted, func(*Egress) {}},
		"no grant":          {wire.Exited, func(e *Egress) { e.Granted = nil }},
		"grant not sorted":  {wire.Exited, func(e *Egress) { e.Granted[0], e.Granted[1] = e.Granted[1], e.Granted[0] }},
		"refused past all":  {wire.Exited, func(e *Egress) { e.Refused = 4 }},
		"listed past total": {wire.Exited, func(e *Egress) { e.Total = 2 }},
		"entry past total":  {wire.Exited, func(e *Egress) { e.Totals[0].Connections = 4 }},
		"refusals unsaid":   {wire.Exited, func(e *Egress) { e.Connections[1].Allowed = false }},
		"allowed unsaid":    {wire.Exited, func(e *Egress) { e.Refused = 3 }},
		"entry not granted": {wire.Exited, func(e *Egress) { e.Totals[0].Entry = "registry.yarnpkg.com:443" }},
		"entry misspelt":    {wire.Exited, func(e *Egress) { e.Totals[0].Entry = "Registry.npmjs.org:443" }},
		"over the cap": {wire.Exited, func(e *Egress) {
			for len(e.Connections) <= wire.MaxConnections {
				e.Connections = append(e.Connections, e.Connections[2])
			}
			e.Total, e.Refused = 1<<20, 1<<19
		}},
	} {
		r := testReceipt("r1", c.outcome)
		r.Egress = EgressOf(testEgress(), wallStamp)
		c.edit(r.Egress)
		if _, err := r.Encode(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
