package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"warrant/internal/logtext"
)

var testMACKey = bytes.Repeat([]byte{7}, MACKeySize)

func newTestRecorder(t testing.TB, retain, budget int64) *Recorder {
	t.Helper()
	r, err := NewRecorder(RecorderConfig{Stream: Stdout, Retain: retain, Budget: budget,
		MACKey: testMACKey, Rules: testRules(t)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func record(t testing.TB, r *Recorder, data []byte, size int) *Captured {
	t.Helper()
	for len(data) > 0 {
		n := min(size, len(data))
		r.Write(data[:n])
		data = data[n:]
	}
	c, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A flood is accounted to the byte: observed = what was written, retained
// = head + tail, dropped = the rest, and both digests match the bytes.
func TestRecorderFloodAccounting(t *testing.T) {
	data := []byte(strings.Repeat("line of ordinary output 0123456789\n", 30000))
	for _, size := range []int{1 << 16, 4093, 7} {
		c := record(t, newTestRecorder(t, 1000, 1<<30), data, size)
		ev := c.Evidence
		n := uint64(len(data))
		if ev.ObservedBytes != n || ev.RedactedBytes != n || ev.RetainedBytes != 2000 || ev.DroppedBytes != n-2000 {
			t.Fatalf("size %d: counters %+v", size, ev)
		}
		if ev.Truncation != TruncRetention || ev.Head != (Range{0, 1000}) || ev.Tail != (Range{n - 1000, n}) {
			t.Fatalf("size %d: ranges %v %v %v", size, ev.Head, ev.Tail, ev.Truncation)
		}
		if !bytes.Equal(c.Head, data[:1000]) || !bytes.Equal(c.Tail, data[n-1000:]) {
			t.Fatalf("size %d: retained bytes differ from the stream's ends", size)
		}
		sum := sha256.Sum256(data)
		if ev.RawHMAC != rawMACOf(data) || ev.RedactedSHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("size %d: digests do not match the bytes", size)
		}
		if want := (n + uint64(size) - 1) / uint64(size); ev.Chunks != want || len(ev.ChunkRecords) != min(int(want), 2*keepChunks) {
			t.Fatalf("size %d: %d chunks, %d records", size, ev.Chunks, len(ev.ChunkRecords))
		}
		last := ev.ChunkRecords[len(ev.ChunkRecords)-1]
		if last.Index != ev.Chunks-1 || last.RawHMAC != ev.RawHMAC || last.RedactedSHA256 != ev.RedactedSHA256 {
			t.Fatalf("size %d: last chunk record %+v does not end the chain", size, last)
		}
	}
}

// A secret split across two chunks: no byte of it is retained, and the
// redacted digest covers the redacted bytes only.
func TestRecorderSplitSecret(t *testing.T) {
	secret := "ghp_" + strings.Repeat("Zq9", 12)
	data := []byte("token: " + secret + "\nbye\n")
	for cut := 1; cut < len(data); cut++ {
		r := newTestRecorder(t, 1<<20, 1<<30)
		r.Write(data[:cut])
		r.Write(data[cut:])
		c, err := r.Close()
		if err != nil {
			t.Fatal(err)
		}
		kept := append(append([]byte{}, c.Head...), c.Tail...)
		if string(kept) != "token: [REDACTED:github-token]\nbye\n" {
			t.Fatalf("cut %d: retained %q", cut, kept)
		}
		for i := 0; i+6 <= len(secret); i++ {
			if bytes.Contains(kept, []byte(secret[i:i+6])) {
				t.Fatalf("cut %d: secret bytes %q retained", cut, secret[i:i+6])
			}
		}
		if sum := sha256.Sum256(kept); c.Evidence.RedactedSHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("cut %d: redacted digest is not over the redacted bytes", cut)
		}
		if c.Evidence.ObservedBytes != uint64(len(data)) || c.Evidence.Redactions[0].Count != 1 {
			t.Fatalf("cut %d: %+v", cut, c.Evidence)
		}
	}
}

func TestRecorderBudget(t *testing.T) {
	r := newTestRecorder(t, 10, 100)
	r.Write(make([]byte, 100))
	if r.OverBudget() {
		t.Fatal("over budget at exactly the budget")
	}
	r.Write([]byte{'x'})
	if !r.OverBudget() {
		t.Fatal("not over budget past it")
	}
	c, _ := r.Close()
	if c.Evidence.Truncation != TruncOutputLimit || c.Evidence.ObservedBytes != 101 {
		t.Fatalf("%+v", c.Evidence)
	}
}

// A redactor failure withholds everything it held and everything after.
func TestRecorderEvidenceBlocked(t *testing.T) {
	rs := testRules(t)
	rs.add(matcher{name: "broken", lits: []string{"BOOM"}, width: 8,
		match: func([]byte) (int, cont) { panic("rule exploded") }})
	r, _ := NewRecorder(RecorderConfig{Stream: Stderr, Retain: 1 << 20, Budget: 1 << 30, MACKey: testMACKey, Rules: rs})
	r.Write([]byte("fine\nBOOM raw-secret"))
	r.Write([]byte(" more raw"))
	c, err := r.Close()
	if err == nil || c.Evidence.Truncation != TruncEvidenceBlocked {
		t.Fatalf("err %v, evidence %+v", err, c.Evidence)
	}
	kept := string(c.Head) + string(c.Tail)
	if strings.Contains(kept, "raw") || c.Evidence.WithheldBytes == 0 ||
		c.Evidence.ObservedBytes != uint64(len("fine\nBOOM raw-secret more raw")) {
		t.Fatalf("retained %q, evidence %+v", kept, c.Evidence)
	}
}

// Writing 1 GiB keeps the heap bounded by the retention and the window.
func TestRecorderMemoryBounded(t *testing.T) {
	r := newTestRecorder(t, 1<<20, 1<<40)
	chunk := []byte(strings.Repeat("flood flood flood flood flood\n", 64<<10/30))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var written int64
	for written < 1<<30 {
		r.Write(chunk)
		written += int64(len(chunk))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	c, _ := r.Close()
	if c.Evidence.ObservedBytes != uint64(written) {
		t.Fatalf("observed %d, wrote %d", c.Evidence.ObservedBytes, written)
	}
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap growth after %d bytes: %d bytes", written, growth)
	if growth > 8<<20 {
		t.Fatalf("heap grew by %d bytes for a 1 GiB stream", growth)
	}
}

func TestProject(t *testing.T) {
	c := record(t, newTestRecorder(t, 8, 1<<30), []byte("ab\x1b[31mc\xffd\u202eZ 0123456789 end\r\n"), 3)
	s := Project(c, 1000)
	want := "ab\\x1b[31mc\n[… 15 bytes omitted (retention_limit) …]\n89 end\\x0d\n"
	if s.Text != want || !s.Truncated || s.ObservedBytes != 31 || s.DroppedBytes != 15 || s.RetainedBytes != 16 ||
		s.RedactedBytes != 31 || s.TextHeadBytes != 8 || s.TextTailBytes != 8 || s.RetainedHeadBytes != 8 {
		t.Fatalf("projection %q %+v", s.Text, s)
	}
	whole := record(t, newTestRecorder(t, 100, 1<<30), []byte("x\xffy\u202e"), 64)
	if s := Project(whole, 1000); s.Text != "x\uFFFDy\\u202e" || s.Truncated {
		t.Fatalf("projection %q %+v", s.Text, s)
	}
	// Bounded below what is retained: the text says how many bytes it
	// leaves out, and its counts say which it shows.
	if s := Project(whole, 2); s.Text != "x\uFFFD\n[… 4 bytes omitted …]\n" || !s.Truncated ||
		s.TextHeadBytes != 2 || s.TextTailBytes != 0 || s.RetainedBytes != 6 {
		t.Fatalf("bounded projection %q %+v", s.Text, s)
	}
	if s := Project(whole, 3); s.Text != "x\uFFFDy\n[… 3 bytes omitted …]\n" || s.TextHeadBytes != 3 || s.TextTailBytes != 0 {
		t.Fatalf("bounded projection %q %+v", s.Text, s)
	}
}

// Every chunk record commits to exactly the stream before its end: its
// MAC is that of the raw prefix and its digest that of the redacted
// prefix, though each is hashed on a worker batches behind the writer;
// the retained digest covers head then tail.
func TestRecorderChunkDigests(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 600<<10; i++ {
		sb.WriteString("ordinary line of output 0123456789 ")
		if i%97 == 0 {
			sb.WriteString(samples[i%len(samples)].secret + " ")
		}
	}
	data := []byte(sb.String())
	want, _, err := testRules(t).Redact(data)
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRecorder(t, 50000, 1<<30)
	sizes := []int{1 << 16, 100, 20000, 7, 40000}
	var ends []int // raw end of every chunk
	for i, rest := 0, data; len(rest) > 0; i++ {
		n := min(len(rest), sizes[i%len(sizes)])
		r.Write(rest[:n])
		rest = rest[n:]
		ends = append(ends, len(data)-len(rest))
	}
	c, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	ev := c.Evidence
	if uint64(len(ends)) != ev.Chunks || ev.RedactedBytes != uint64(len(want)) {
		t.Fatalf("%d chunks written, %d recorded; %d redacted bytes, want %d", len(ends), ev.Chunks, ev.RedactedBytes, len(want))
	}
	redEnd := map[uint64]uint64{} // chunk index -> redacted end, from the first records on
	var off uint64
	for _, rec := range ev.ChunkRecords {
		if rec.Index < keepChunks {
			off += rec.RedactedBytes
			redEnd[rec.Index] = off
		}
	}
	checked := 0
	for _, rec := range ev.ChunkRecords {
		if rec.RawHMAC != rawMACOf(data[:ends[rec.Index]]) {
			t.Fatalf("chunk %d: raw HMAC is not that of the raw prefix", rec.Index)
		}
		end, ok := redEnd[rec.Index]
		if rec.Index == ev.Chunks-1 {
			end, ok = uint64(len(want)), true
		}
		if ok {
			if sum := sha256.Sum256(want[:end]); rec.RedactedSHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("chunk %d: redacted digest is not that of the redacted prefix", rec.Index)
			}
			checked++
		}
	}
	if checked != keepChunks+1 {
		t.Fatalf("checked %d redacted digests, want %d", checked, keepChunks+1)
	}
	if sum := sha256.Sum256(append(append([]byte{}, c.Head...), c.Tail...)); ev.RetainedSHA256 != hex.EncodeToString(sum[:]) ||
		!bytes.Equal(c.Head, want[:50000]) || !bytes.Equal(c.Tail, want[len(want)-50000:]) {
		t.Fatal("retained bytes or their digest do not match the redacted stream's ends")
	}
}

// The retained digest is taken from a clone of the redacted digest when
// the head fills, or is the redacted digest itself when it never does; at
// every edge of that it must still be the digest of head then tail.
func TestRecorderRetainedDigest(t *testing.T) {
	data := []byte(strings.Repeat("line of output with "+samples[0].secret+" in it\n", 300))
	want, _, err := testRules(t).Redact(data)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(want))
	for _, retain := range []int64{0, 1, 1000, n/2 - 1, n / 2, n/2 + 1, n - 1, n, n + 1, 4 * n} {
		for _, size := range []int{1, 333, 1 << 16} {
			c := record(t, newTestRecorder(t, retain, 1<<30), data, size)
			h, tl := min(retain, n), min(retain, n-min(retain, n))
			sum := sha256.Sum256(append(append([]byte{}, c.Head...), c.Tail...))
			if !bytes.Equal(c.Head, want[:h]) || !bytes.Equal(c.Tail, want[n-tl:]) ||
				c.Evidence.RetainedSHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("retain %d, writes of %d: head %d tail %d bytes, retained digest %s, want %x",
					retain, size, len(c.Head), len(c.Tail), c.Evidence.RetainedSHA256, sum)
			}
		}
	}
}

// A log with credentials (internal/logtext), written in chunks of several
// sizes, is redacted exactly as logtext says line by line, independently
// of this package: the redacted digest, counts and hits match.
func TestRecorderLogText(t *testing.T) {
	var raw, want bytes.Buffer
	hits := map[string]uint64{}
	logtext.Write(&raw, 8<<20, 3, func(_, red []byte, rule string) {
		want.Write(red)
		if rule != "" {
			hits[rule]++
		}
	})
	sum := sha256.Sum256(want.Bytes())
	for _, size := range []int{MaxChunk, 65521, 4093, 61} {
		ev := record(t, newTestRecorder(t, 1<<20, 1<<40), raw.Bytes(), size).Evidence
		if ev.ObservedBytes != uint64(raw.Len()) || ev.RedactedBytes != uint64(want.Len()) ||
			ev.RedactedSHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("size %d: %d raw → %d redacted bytes, SHA-256 %s; want %d → %d, %x",
				size, ev.ObservedBytes, ev.RedactedBytes, ev.RedactedSHA256, raw.Len(), want.Len(), sum)
		}
		got := map[string]uint64{}
		for _, h := range ev.Redactions {
			got[h.Type] = h.Count
		}
		if fmt.Sprint(got) != fmt.Sprint(hits) {
			t.Fatalf("size %d: hits %v, want %v", size, got, hits)
		}
	}
}

// Live is handed the redacted stream as it is released: a written line
// before Write returns, and over the whole stream exactly the redacted
// bytes, with no secret in them, however the writes were cut.
func TestRecorderLive(t *testing.T) {
	var raw, want bytes.Buffer
	logtext.Write(&raw, 1<<20, 5, func(_, red []byte, _ string) { want.Write(red) })
	for _, size := range []int{MaxChunk, 4093, 61} {
		var live []byte
		r, err := NewRecorder(RecorderConfig{Stream: Stdout, Retain: 1 << 10, Budget: 1 << 40,
			MACKey: testMACKey, Rules: testRules(t), Live: func(p []byte) { live = append(live, p...) }})
		if err != nil {
			t.Fatal(err)
		}
		r.Write([]byte("compiling 3 packages\n"))
		if string(live) != "compiling 3 packages\n" {
			t.Fatalf("a written line was not released at once: %q", live)
		}
		live = live[:0]
		record(t, r, raw.Bytes(), size)
		if !bytes.Equal(live, want.Bytes()) {
			t.Fatalf("size %d: live output (%d bytes) is not the redacted stream (%d bytes)", size, len(live), want.Len())
		}
	}
}
