package receipt

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// rawMACOf is a raw stream's keyed digest: HMAC-SHA256 under the output
// key of the stream's SHA-256.
func rawMACOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	m := hmac.New(sha256.New, testMACKey)
	m.Write(sum[:])
	return hex.EncodeToString(m.Sum(nil))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// onePassText is n bytes of ordinary lines.
func onePassText(n int) string {
	line := "ordinary line of output 0123456789 with-words and_more\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// checkOnePass records data written in pieces of sizes (cycled) and
// requires every digest the evidence carries to be the digest of exactly
// its bytes: the raw MAC (of the stream and of each chunk record's raw
// prefix) is the HMAC of that prefix's SHA-256, the redacted digests are
// the SHA-256 of the redacted prefix, the retained digest that of head
// then tail; and the bare SHA-256 of no raw prefix at a chunk's end is
// published unless those bytes were published unchanged.
func checkOnePass(t *testing.T, name string, data []byte, sizes []int, retain int64) {
	t.Helper()
	want, _, err := testRules(t).Redact(data)
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRecorder(t, retain, 1<<40)
	var ends []int
	for i, rest := 0, data; len(rest) > 0; i++ {
		n := min(len(rest), sizes[i%len(sizes)])
		r.Write(rest[:n])
		for k := MaxChunk; k < n; k += MaxChunk { // a longer write is recorded as several chunks
			ends = append(ends, len(data)-len(rest)+k)
		}
		rest = rest[n:]
		ends = append(ends, len(data)-len(rest))
	}
	c, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	ev := c.Evidence
	if ev.ObservedBytes != uint64(len(data)) || ev.RedactedBytes != uint64(len(want)) || ev.Chunks != uint64(len(ends)) {
		t.Fatalf("%s: observed %d redacted %d chunks %d; want %d, %d, %d", name,
			ev.ObservedBytes, ev.RedactedBytes, ev.Chunks, len(data), len(want), len(ends))
	}
	if ev.RawHMAC != rawMACOf(data) {
		t.Fatalf("%s: raw MAC is not HMAC(k, SHA-256(raw))", name)
	}
	if ev.RedactedSHA256 != sha256Hex(want) {
		t.Fatalf("%s: redacted digest is not that of the redacted stream", name)
	}
	if kept := append(append([]byte{}, c.Head...), c.Tail...); ev.RetainedSHA256 != sha256Hex(kept) {
		t.Fatalf("%s: retained digest is not that of head then tail", name)
	}
	// The redacted end of every record: from the first ones forwards,
	// from the last ones (whose last ends the stream) backwards.
	redEnd := map[uint64]uint64{}
	var off uint64
	for _, rec := range ev.ChunkRecords {
		if rec.Index < keepChunks {
			off += rec.RedactedBytes
			redEnd[rec.Index] = off
		}
	}
	off = ev.RedactedBytes
	for i := len(ev.ChunkRecords) - 1; i >= 0 && ev.ChunkRecords[i].Index >= keepChunks; i-- {
		redEnd[ev.ChunkRecords[i].Index] = off
		off -= ev.ChunkRecords[i].RedactedBytes
	}
	for _, rec := range ev.ChunkRecords {
		end := ends[rec.Index]
		if rec.RawHMAC != rawMACOf(data[:end]) {
			t.Fatalf("%s: chunk %d (raw end %d): raw MAC is not that of the raw prefix", name, rec.Index, end)
		}
		if rec.RedactedSHA256 != sha256Hex(want[:redEnd[rec.Index]]) {
			t.Fatalf("%s: chunk %d (redacted end %d): redacted digest is not that of the redacted prefix", name, rec.Index, redEnd[rec.Index])
		}
	}
	js, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, end := range append(ends, 0) {
		if bytes.HasPrefix(want, data[:end]) {
			continue // published as they are: their digest may be too
		}
		if bytes.Contains(js, []byte(sha256Hex(data[:end]))) {
			t.Fatalf("%s: the bare SHA-256 of the first %d raw bytes, which were not published, is in the evidence", name, end)
		}
	}
}

// The raw MAC and the redacted digest come from one SHA-256 pass until
// the first redaction, and from two after it: on streams with no hit, a
// hit at offset 0, at the very end, split across writes, several hits,
// and hits before and after the hash workers have started, every digest
// is that of exactly its bytes, however the writes are cut.
func TestRecorderOnePassDigests(t *testing.T) {
	secret := samples[2].secret // github-token
	big := onePassText(700 << 10)
	var several strings.Builder
	for i := 0; several.Len() < 600<<10; i++ {
		several.WriteString(onePassText(3000 + 17*i))
		several.WriteString("\n" + samples[i%len(samples)].secret + "\n")
	}
	cases := []struct {
		name string
		data string
	}{
		{"none", onePassText(5000)},
		{"none-long", big},
		{"empty", ""},
		{"at-0", secret + "\n" + onePassText(3000)},
		{"at-0-only", secret},
		{"at-end", onePassText(3000) + " " + secret},
		{"at-end-long", big + " " + secret},
		{"middle", onePassText(3000) + " " + secret + " " + onePassText(3000)},
		{"after-workers", big + " " + secret + "\n" + big},
		{"before-workers", secret + "\n" + big + big},
		{"several", several.String()},
		// A PEM block without its END line: the redacted stream stops at
		// the placeholder while 2 MiB of raw bytes go on.
		{"pem-open", onePassText(1000) + "\n-----BEGIN PRIVATE KEY-----\n" + strings.Repeat("QUJDREVGR0g=\n", 2<<20/13)},
	}
	for _, tc := range cases {
		data := []byte(tc.data)
		red, hits, err := testRules(t).Redact(data)
		if err != nil || (len(hits) == 0) != (tc.name == "empty" || strings.HasPrefix(tc.name, "none")) ||
			(tc.name == "several" && len(hits) != len(samples)) || (len(hits) == 0) != bytes.Equal(red, data) {
			t.Fatalf("%s: hits %v, %v", tc.name, hits, err)
		}
		for _, sizes := range [][]int{{MaxChunk}, {4093}, {7, 60000, 1, 333}} {
			for _, retain := range []int64{0, 1000, 1 << 20} {
				checkOnePass(t, tc.name, data, sizes, retain)
			}
		}
		if len(data) < 20000 {
			checkOnePass(t, tc.name+"/bytewise", data, []int{1}, 1000)
		}
	}
}

// The first redaction split across two writes at every place: the shared
// state is taken over exactly where the redacted stream first differs,
// not where the write that completed the secret began.
func TestRecorderOnePassSplitHit(t *testing.T) {
	secret := samples[2].secret
	prefix := onePassText(300)
	data := []byte(prefix + " " + secret + " tail\n" + onePassText(200) + samples[0].secret + "\n")
	for cut := 1; cut < len(data); cut++ {
		checkOnePass(t, "cut", data, []int{cut, len(data)}, 100)
	}
	// And with the stream past a batch before the hit, so that the shared
	// digest is on its worker when it is copied.
	long := []byte(onePassText(flushAt+3*MaxChunk+11) + "\n" + secret + "\n" + onePassText(5000))
	hit := bytes.Index(long, []byte(secret))
	for _, cut := range []int{hit - 1, hit, hit + 1, hit + 4, hit + len(secret) - 1, hit + len(secret)} {
		checkOnePass(t, "long-cut", long, []int{cut, len(long)}, 1000)
	}
}

// A redactor failure withholds the bytes it held and everything after;
// the raw MAC still covers every observed byte.
func TestRecorderOnePassBlocked(t *testing.T) {
	for _, pre := range []string{"", "fine\n" + samples[2].secret + "\n", onePassText(flushAt + 5000)} {
		rs := testRules(t)
		rs.add(matcher{name: "broken", lits: []string{"BOOM"}, width: 8,
			match: func([]byte) (int, cont) { panic("rule exploded") }})
		r, err := NewRecorder(RecorderConfig{Stream: Stderr, Retain: 1 << 20, Budget: 1 << 30, MACKey: testMACKey, Rules: rs})
		if err != nil {
			t.Fatal(err)
		}
		parts := []string{pre + "fine\nBOOM raw-secret", " more raw", onePassText(flushAt)}
		for _, p := range parts {
			r.Write([]byte(p))
		}
		c, err := r.Close()
		if err == nil || c.Evidence.Truncation != TruncEvidenceBlocked || c.Evidence.WithheldBytes == 0 {
			t.Fatalf("err %v, evidence %+v", err, c.Evidence)
		}
		raw := []byte(strings.Join(parts, ""))
		kept := append(append([]byte{}, c.Head...), c.Tail...)
		if c.Evidence.RawHMAC != rawMACOf(raw) || c.Evidence.RedactedSHA256 != sha256Hex(kept) {
			t.Fatalf("pre %d bytes: digests are not those of the raw and the released bytes", len(pre))
		}
	}
}
