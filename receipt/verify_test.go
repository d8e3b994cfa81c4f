package receipt

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"warrant/wire"
)

// The example of the DSSE protocol (secure-systems-lab/dsse, protocol.md,
// "Test Vectors"): our PAE gives the published bytes, and the published
// ECDSA P-256 signature verifies over them.
func TestPAEVector(t *testing.T) {
	pae := PAE("http://example.com/HelloWorld", []byte("hello world"))
	if string(pae) != "DSSEv1 29 http://example.com/HelloWorld 11 hello world" {
		t.Fatalf("PAE = %q", pae)
	}
	x, _ := new(big.Int).SetString("46950820868899156662930047687818585632848591499744589407958293238635476079160", 10)
	y, _ := new(big.Int).SetString("5640078356564379163099075877009565129882514886557779369047442380624545832820", 10)
	sig, _ := base64.StdEncoding.DecodeString("A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA==")
	sum := sha256.Sum256(pae)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x.FillBytes(make([]byte, 32))...), y.FillBytes(make([]byte, 32))...))
	if err != nil {
		t.Fatal(err)
	}
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the published signature does not verify over our PAE")
	}
}

func TestVerifySignedLog(t *testing.T) {
	k := testKeys(t)
	entries, cps := testLog(t, k, 5)
	rep := Verify(entries, cps, k.Public())
	if !rep.OK() || rep.Receipts != 5 || rep.Checkpoint == nil || rep.Checkpoint.N != 5 || rep.Unanchored != 0 {
		t.Fatalf("report %+v", rep)
	}
	other := testKeys(t)
	if rep := Verify(entries, cps, other.Public()); rep.OK() {
		t.Fatal("a log verified under another key")
	}
}

func TestReceiptsForEveryOutcome(t *testing.T) {
	k := testKeys(t)
	c, _ := NewChain(k, nil)
	var entries []Entry
	for i, o := range allOutcomes {
		e, err := c.Seal(testReceipt("r"+o.String(), o))
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		if e.Index != int64(i) {
			t.Fatalf("index %d", e.Index)
		}
		entries = append(entries, e)
	}
	if rep := Verify(entries, nil, k.Public()); !rep.OK() || rep.Unanchored != int64(len(entries)) {
		t.Fatalf("%+v", rep)
	}
}

// A log resumed from its stored entries goes on chaining where it was.
func TestChainResume(t *testing.T) {
	k := testKeys(t)
	entries, _ := testLog(t, k, 3)
	c, err := NewChain(k, entries)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Seal(testReceipt("late", wire.Exited))
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := c.Checkpoint()
	if rep := Verify(append(entries, e), [][]byte{cp}, k.Public()); !rep.OK() || rep.Entries != 4 {
		t.Fatalf("%+v", rep)
	}
}

func hasProblem(rep *Report, index int64, kinds ...ProblemKind) bool {
	for _, p := range rep.Problems {
		for _, k := range kinds {
			if p.Kind == k && (index < 0 || p.Index == index) {
				return true
			}
		}
	}
	return false
}

func clone(entries []Entry) []Entry {
	out := make([]Entry, len(entries))
	for i, e := range entries {
		out[i] = Entry{Index: e.Index, Envelope: bytes.Clone(e.Envelope), Body: bytes.Clone(e.Body)}
	}
	return out
}

// The tamper suite over a 200-receipt log. Every single-byte edit of
// every stored envelope, body and checkpoint; every deletion; every swap
// of two receipts; every truncation; and re-signing are detected.
func TestTamperSuite(t *testing.T) {
	const n = 200
	k := testKeys(t)
	entries, cps := testLog(t, k, n)
	pub := k.Public()
	if rep := Verify(entries, cps, pub); !rep.OK() {
		t.Fatalf("clean log: %+v", rep.Problems)
	}
	var checked atomic.Int64

	// Single-byte edits of envelopes. An envelope is checked on its own
	// (checkEntry is what Verify runs for each entry); a stride of them
	// also through the whole-log Verify, which must name the index. With
	// -short only four entries are swept (about 90 s less); the count
	// checked is logged either way.
	swept := func(i int) bool { return !testing.Short() || i == 0 || i == 1 || i == n/2 || i == n-1 }
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			v := NewVerifier(pub)
			mine := clone(entries)
			for i := w; i < n; i += workers {
				if !swept(i) {
					continue
				}
				env := mine[i].Envelope
				for j := range env {
					env[j] ^= 0x01
					if checkEntry(env, pub).err == nil {
						t.Errorf("edit of envelope %d byte %d not detected", i, j)
					}
					if j%997 == 0 {
						if rep := v.Verify(mine, cps, Expect{}); !hasProblem(rep, int64(i), ProblemMalformed, ProblemBadSignature, ProblemForeignKey) {
							t.Errorf("whole-log verify missed edit of envelope %d byte %d: %+v", i, j, rep.Problems)
						}
					}
					env[j] ^= 0x01
					checked.Add(1)
				}
			}
		})
	}
	wg.Wait()
	edits := checked.Load()

	v := NewVerifier(pub)
	expect := func(what string, es []Entry, c [][]byte, index int64, kinds ...ProblemKind) {
		t.Helper()
		checked.Add(1)
		if rep := v.Verify(es, c, Expect{}); !hasProblem(rep, index, kinds...) {
			t.Fatalf("%s not detected as %v at %d: %+v", what, kinds, index, rep.Problems)
		}
	}
	for i := range entries {
		body := entries[i].Body
		for j := range body {
			body[j] ^= 0x01
			expect("body edit", entries, cps, int64(i), ProblemBody)
			body[j] ^= 0x01
		}
	}
	for j := range cps[0] {
		cp := bytes.Clone(cps[0])
		cp[j] ^= 0x01
		expect("checkpoint edit", entries, [][]byte{cp}, -1, ProblemCheckpoint)
	}
	for i := 0; i < n; i++ {
		del := append(clone(entries[:i]), clone(entries[i+1:])...)
		for j := i; j < len(del); j++ {
			del[j].Index = int64(j) // a careful attacker renumbers the store
		}
		if i == n-1 { // the last entry: indistinguishable from truncation, and reported as such
			expect("deletion", del, cps, -1, ProblemTruncated)
		} else {
			expect("deletion", del, cps, int64(i), ProblemMoved, ProblemChain)
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			sw := append([]Entry(nil), entries...)
			sw[i], sw[j] = sw[j], sw[i]
			sw[i].Index, sw[j].Index = int64(i), int64(j)
			expect("swap", sw, cps, int64(i), ProblemMoved)
		}
	}
	for m := 0; m < n; m++ {
		expect("truncation", entries[:m], cps, -1, ProblemTruncated)
	}
	// Re-signing: a receipt rewritten and signed with another key.
	other := testKeys(t)
	oc, _ := NewChain(other, nil)
	forged, _ := oc.Seal(testReceipt("r000", wire.Exited))
	re := append([]Entry{forged}, entries[1:]...)
	expect("re-signing", re, cps, 0, ProblemForeignKey)
	t.Logf("tamper suite: %d single-byte envelope edits, %d other tamperings, all detected", edits, checked.Load()-edits)
}

func TestPrune(t *testing.T) {
	k := testKeys(t)
	entries, _ := testLog(t, k, 6)
	c, _ := NewChain(k, entries)
	cutoff := time.Unix(1_700_000_000+3, 0) // receipts issued at 0,1,2 are older
	rec, pruned, ok, err := c.Prune(entries, cutoff, "older-than 720h", at(100))
	if err != nil || !ok || len(pruned) != 3 {
		t.Fatalf("prune: %v %v %v", pruned, ok, err)
	}
	for _, i := range pruned {
		entries[i].Body = nil
	}
	entries = append(entries, rec)
	cp, _ := c.Checkpoint()
	rep := Verify(entries, [][]byte{cp}, k.Public())
	if !rep.OK() || len(rep.Pruned) != 3 || rep.Deletions != 1 || rep.Pruned[0].At != at(100) || rep.Pruned[2].Index != 2 {
		t.Fatalf("%+v", rep)
	}
	// A deletion record re-signed by the broker's own key but naming other
	// receipts as its subjects is malformed.
	payload, _, err := openEnvelope(rec.Envelope, k.Public())
	if err != nil {
		t.Fatal(err)
	}
	st, err := decodeStatement(payload)
	if err != nil {
		t.Fatal(err)
	}
	st.Subject[0].Name = "receipt:someone-else"
	if c := checkEntry(k.seal(PayloadType, statement(st.PredicateType, st.Subject, st.Predicate)), k.Public()); c.err == nil {
		t.Fatal("a deletion record with the wrong subjects verified")
	}
	// A body deleted without a record is reported.
	entries[4].Body = nil
	if rep := Verify(entries, [][]byte{cp}, k.Public()); !hasProblem(rep, 4, ProblemBodyMissing) {
		t.Fatalf("silent body deletion not reported: %+v", rep.Problems)
	}
}

func TestKeysFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	k1, err := LoadOrCreateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{".": 0o700, SigningKeyFile: 0o600, MACKeyFile: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v %v", name, fi.Mode(), err)
		}
	}
	k2, err := LoadOrCreateKeys(dir)
	if err != nil || !k1.Public().Equal(k2.Public()) || !bytes.Equal(k1.MACKey(), k2.MACKey()) {
		t.Fatal("keys changed on reload")
	}
	if bytes.Equal(k1.MACKey(), k1.priv.Seed()) {
		t.Fatal("the HMAC key is the signing key")
	}
	os.Chmod(filepath.Join(dir, MACKeyFile), 0o644)
	if _, err := LoadOrCreateKeys(dir); err == nil {
		t.Fatal("a world-readable key was loaded")
	}
	os.Chmod(filepath.Join(dir, MACKeyFile), 0o600)
	os.Chmod(dir, 0o755)
	if _, err := LoadOrCreateKeys(dir); err == nil {
		t.Fatal("an open key directory was accepted")
	}
}

func TestExportDSSEJSONL(t *testing.T) {
	k := testKeys(t)
	entries, _ := testLog(t, k, 3)
	var buf bytes.Buffer
	if err := ExportDSSEJSONL(&buf, entries); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	if len(lines) != len(entries) {
		t.Fatalf("%d lines for %d entries", len(lines), len(entries))
	}
	for i, l := range lines {
		if !bytes.Equal(l, entries[i].Envelope) {
			t.Fatalf("line %d differs from the stored envelope", i)
		}
	}
}
