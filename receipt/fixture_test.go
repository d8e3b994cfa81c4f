package receipt

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"warrant/wire"
)

// logFixture is a committed receipt log: its keys (test keys, made for
// the fixture), its entries with the raw streams each receipt recorded,
// and its checkpoints.
type logFixture struct {
	Note        string         `json:"note"`
	Seed        string         `json:"seed"`   // ed25519 seed of the signing key
	MACKey      string         `json:"macKey"` // the output HMAC key
	Entries     []fixtureEntry `json:"entries"`
	Checkpoints []string       `json:"checkpoints"`
}

type fixtureEntry struct {
	Index    int64     `json:"index"`
	Envelope string    `json:"envelope"`
	Body     []byte    `json:"body"`
	Raw      [2]string `json:"raw"` // stdout and stderr as the target wrote them
}

// loadFixture reads testdata/name and returns it with its keys.
func loadFixture(t testing.TB, name string) (*logFixture, *Keys) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var fx logFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	seed, err1 := hex.DecodeString(fx.Seed)
	mac, err2 := hex.DecodeString(fx.MACKey)
	if err1 != nil || err2 != nil || len(seed) != ed25519.SeedSize || len(mac) != MACKeySize {
		t.Fatalf("fixture %s: bad keys", name)
	}
	return &fx, &Keys{priv: ed25519.NewKeyFromSeed(seed), mac: mac}
}

func (fx *logFixture) log() ([]Entry, [][]byte) {
	var entries []Entry
	for _, e := range fx.Entries {
		entries = append(entries, Entry{Index: e.Index, Envelope: []byte(e.Envelope), Body: e.Body})
	}
	var cps [][]byte
	for _, c := range fx.Checkpoints {
		cps = append(cps, []byte(c))
	}
	return entries, cps
}

// A log of command-receipt.v1 receipts, committed as the recorder made
// them before one hash pass, still verifies, and its raw MACs keep their
// old meaning (HMAC over the raw bytes); appended to under this version,
// the log of both versions verifies, and the new receipts' raw MACs are
// HMACs of the raw stream's SHA-256.
func TestVerifyReceiptVersions(t *testing.T) {
	fx, k := loadFixture(t, "log-v1.json")
	entries, cps := fx.log()
	rep := NewVerifier(k.Public()).Verify(entries, cps, Expect{Checkpointed: true})
	if !rep.OK() || rep.Receipts != 2 || rep.Unanchored != 0 {
		t.Fatalf("v1 log: %+v", rep)
	}
	for i, e := range entries {
		r := checkEntry(e.Envelope, k.Public()).receipt
		if r == nil || r.Format != FormatV1 || len(r.Streams) != 2 {
			t.Fatalf("entry %d: %+v", i, r)
		}
		for j, s := range r.Streams {
			m := hmac.New(sha256.New, k.MACKey())
			m.Write([]byte(fx.Entries[i].Raw[j]))
			if s.RawHMAC != hex.EncodeToString(m.Sum(nil)) {
				t.Fatalf("entry %d %s: the v1 raw MAC is not the HMAC of the raw bytes", i, s.Stream)
			}
		}
	}

	c, err := NewChain(k, entries)
	if err != nil {
		t.Fatal(err)
	}
	raw := "v2 output\ntoken " + samples[2].secret + "\n"
	e, err := c.Seal(testReceipt("r-v2-0", wire.Exited), testCaptured(t, Stdout, raw), testCaptured(t, Stderr, ""))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := c.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	mixed := append(entries, e)
	rep = NewVerifier(k.Public()).Verify(mixed, append(cps, cp), Expect{Checkpointed: true, Anchors: cps})
	if !rep.OK() || rep.Receipts != 3 || rep.Unanchored != 0 {
		t.Fatalf("mixed log: %+v", rep)
	}
	r := checkEntry(e.Envelope, k.Public()).receipt
	if r == nil || r.Format != Format || Format == FormatV1 || r.Streams[0].RawHMAC != rawMACOf([]byte(raw)) {
		t.Fatalf("new receipt: %+v", r.Streams)
	}

	// A receipt of an unknown version is refused.
	bad := testReceipt("r-v9", wire.Exited)
	bad.Format = "command-receipt.v9"
	if err := bad.Validate(); err == nil {
		t.Fatal("a receipt of an unknown format was accepted")
	}
}
