package receiptview

import (
	"strings"
	"testing"
	"time"

	"warrant/receipt"
)

// receipts show says the grant, the totals and each connection, with the
// host the target named quoted where a rune of it would not print as
// itself, and how many connections were counted but not listed.
func TestReceiptSaysEgress(t *testing.T) {
	at := func(ms int64) receipt.Time {
		return receipt.Stamp(time.Duration(ms)*time.Millisecond, time.Unix(1_700_000_000, ms*1e6))
	}
	e := &receipt.Egress{Granted: []string{"127.0.0.1:4873", "registry.npmjs.org:443"}, Total: 4, Refused: 1,
		Totals: []receipt.EgressTotal{{Entry: "registry.npmjs.org:443", Connections: 1, UpBytes: 1200, DownBytes: 3565000}},
		Connections: []receipt.EgressConnection{
			{Host: "registry.npmjs.org", Port: 443, Address: "104.16.1.34", SNI: "registry.npmjs.org", UpBytes: 1200,
				DownBytes: 3565000, Start: at(0), End: at(1500), Allowed: true},
			{Host: "evil\x1b]0;pwned\a.example", Port: 443, Start: at(1800), End: at(1800),
				Reason: "evil\x1b]0;pwned\a.example:443 is not on lease l-1"},
		}}
	var b strings.Builder
	writeReceiptEgress(&b, e)
	out := b.String()
	for _, want := range []string{
		"Egress    granted 127.0.0.1:4873, registry.npmjs.org:443\n          4 connection(s) through the proxy, 1 refused\n",
		"          registry.npmjs.org:443: 1 connection(s), 1200 bytes up, 3565000 bytes down\n",
		"          registry.npmjs.org:443 allowed (address 104.16.1.34, SNI registry.npmjs.org, 1200 bytes up, 3565000 down, 2023-11-14T22:13:20.000000000Z for 1.5s)\n",
		`          "evil\x1b]0;pwned\a.example":443 REFUSED: "evil\x1b]0;pwned\a.example:443 is not on lease l-1" (0 bytes up, 0 down,`,
		"          and 2 more connection(s) past the first 256, counted above but not listed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("receipts show does not say %q:\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, 0x1b) || strings.ContainsRune(out, 0x07) {
		t.Fatalf("a raw control character reaches the terminal:\n%q", out)
	}
}
