package receipt

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

func testDenials() *wire.Denials {
	return &wire.Denials{Sources: []string{"broker", "filter-count"}, Total: 5, Counts: []wire.DenialCount{
		{Effect: wire.EffectMetadata, Call: "chmod", Rule: wire.RuleOutsideScope, Source: wire.SourceBroker, Count: 1},
		{Effect: wire.EffectSocket, Call: "socket", Family: "AF_INET", Rule: wire.RuleNoNetwork, Source: wire.SourceFilterCount, Count: 3},
		{Effect: wire.EffectPtrace, Call: "ptrace", Rule: wire.RuleNoPtrace, Source: wire.SourceFilterCount, Count: 1},
	}, Records: []wire.Denial{
		{Effect: wire.EffectMetadata, Call: "chmod", Object: "/etc/hosts", Rule: wire.RuleOutsideScope,
			Source: wire.SourceBroker, Count: 1, FirstUnixNs: time.Unix(1_700_000_004, 0).UnixNano()},
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_INET SOCK_STREAM", Family: "AF_INET", Rule: wire.RuleNoNetwork,
			Source: wire.SourceFilterCount, Count: 3, FirstUnixNs: time.Unix(1_700_000_005, 0).UnixNano()},
	}}
}

func wallStamp(t time.Time) Time { return Stamp(t.Sub(time.Unix(1_700_000_000, 0)), t) }

// A receipt with denials seals into a log that verifies, names each
// record's effect, rule and source by name, and decodes back to the same
// bytes; the log of receipts with and without them verifies as a whole.
func TestReceiptCarriesDenials(t *testing.T) {
	k := testKeys(t)
	c, err := NewChain(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := c.Seal(testReceipt("r-plain", wire.Exited), testCaptured(t, Stdout, ""), testCaptured(t, Stderr, ""))
	if err != nil {
		t.Fatal(err)
	}
	r := testReceipt("r-denied", wire.Exited)
	r.Denials = DenialsOf(testDenials(), wallStamp)
	e, err := c.Seal(r, testCaptured(t, Stdout, ""), testCaptured(t, Stderr, ""))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := c.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if rep := NewVerifier(k.Public()).Verify([]Entry{plain, e}, [][]byte{cp}, Expect{Checkpointed: true}); !rep.OK() || rep.Receipts != 2 {
		t.Fatalf("%+v", rep)
	}
	if strings.Contains(string(plain.Envelope), "denials") {
		t.Fatal("a receipt without denials mentions them")
	}
	got := checkEntry(e.Envelope, k.Public()).receipt
	if got == nil || got.Denials == nil || got.Denials.Total != 5 || len(got.Denials.Records) != 2 {
		t.Fatalf("the sealed receipt's denials: %+v", got)
	}
	b, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"effect":"socket"`, `"rule":"no-network"`, `"source":"filter-count"`,
		`"object":"AF_INET SOCK_STREAM","family":"AF_INET"`, `"sources":["broker","filter-count"]`, `"first":{"monoNs":5000000000`,
		`{"effect":"ptrace","call":"ptrace","rule":"no-ptrace","source":"filter-count","count":1}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the receipt does not say %s:\n%s", want, b)
		}
	}
	if back, err := DecodeReceipt(b); err != nil || !reflect.DeepEqual(back.Denials.Wire(), testDenials()) {
		t.Fatalf("decode: %v", err)
	}
}

func TestReceiptDenialsClaimNoMore(t *testing.T) {
	for name, c := range map[string]struct {
		outcome wire.Outcome
		edit    func(*Denials)
	}{
		"not started":     {wire.KnownNotExecuted, func(*Denials) {}},
		"more than total": {wire.Exited, func(d *Denials) { d.Total = 3 }},
		"uncounted calls": {wire.Exited, func(d *Denials) { d.Total = 6 }},
		"raw escape":      {wire.Exited, func(d *Denials) { d.Records[0].Object = "/etc/\x1b]0;pwned\x07" }},
		"unwatched":       {wire.Exited, func(d *Denials) { d.Sources = []string{"broker"} }},
		"zero count":      {wire.Exited, func(d *Denials) { d.Records[0].Count = 0 }},
		"over the cap": {wire.Exited, func(d *Denials) {
			for len(d.Records) <= wire.MaxDenials {
				d.Records = append(d.Records, d.Records[0])
			}
			d.Total = 1 << 20
		}},
	} {
		r := testReceipt("r1", c.outcome)
		r.Denials = DenialsOf(testDenials(), wallStamp)
		c.edit(r.Denials)
		if _, err := r.Encode(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
