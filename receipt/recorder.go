package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sync/atomic"

	"warrant/internal/closed"
)

const (
	// MaxChunk is the largest chunk: a longer Write is recorded as several.
	MaxChunk = 64 << 10
	// keepChunks is how many chunk records are kept at each end.
	keepChunks = 16
	// MACKeySize is the size of the broker-only output HMAC key.
	MACKeySize = 32
)

// RecorderConfig configures one stream's Recorder.
type RecorderConfig struct {
	Stream StreamName
	Retain int64    // head and tail kept, each (profile.Of(p).Retain)
	Budget int64    // hard output budget (profile.Of(p).HardOutput)
	MACKey []byte   // Keys.MACKey(): never a bare hash of raw output
	Rules  *Ruleset // the redaction rules
	// Live, if set, receives redacted output as it is released, for live
	// display: once per Write (and once at Close) with what it released.
	// It must not keep the slice.
	Live func(redacted []byte)
}

// Recorder records one output stream: it counts and MACs the raw bytes,
// redacts them, digests and retains (head and tail of) the redacted
// stream, and keeps chunk records. Its memory is bounded by Retain, the
// ruleset's window, MaxChunk and its hash workers' queues (see
// hashWorker), whatever is written. Write and Close belong to one
// goroutine; OverBudget may be polled from any. Close must be called: it
// also ends the recorder's hashing goroutines, which run beside the
// writer's redaction.
//
// The raw stream's MAC is HMAC-SHA256 under the output key of the raw
// stream's SHA-256 (receipt format v2), and the two streams are one until
// the first redaction: one SHA-256 of the released output serves both.
// Where the redacted stream first differs (the first placeholder, at a
// raw offset that is also its redacted offset) the raw digest starts as a
// copy of that state and takes the raw bytes from there on; a stream
// without a hit is hashed once. A build whose SHA-256 cannot copy its
// state (GOFIPS140=v1.0.0) hashes the raw stream apart from its first
// byte. No bare SHA-256 of raw bytes that were not released as they are
// is ever published.
//
// The head is never hashed twice: the retained digest starts as a copy of
// the redacted digest at the moment it has taken exactly the head, and
// only the tail is added at Close.
type Recorder struct {
	cfg      RecorderConfig
	observed atomic.Uint64
	eng      *engine
	red      *hashWorker    // SHA-256 of redacted bytes, and of raw ones until raw is set
	raw      *hashWorker    // SHA-256 of raw bytes once the streams differ
	flushRed bool           // red holds the mark raw starts from: hand it over before raw's batches
	headSum  chan hash.Hash // the redacted digest's state after the head

	rawDone  uint64 // raw bytes accounted for in redacted output
	redTotal uint64
	redChunk uint64 // redacted offset where the last finished chunk ended
	head     []byte
	tail     ring
	chunks   uint64
	pending  []*Chunk // written, not yet fully released
	pendEnd  []uint64 // raw end offset of each pending chunk
	first    []*Chunk
	last     [keepChunks]*Chunk
	closed   bool
}

// NewRecorder returns a recorder for one stream.
func NewRecorder(cfg RecorderConfig) (*Recorder, error) {
	switch {
	case !closed.Valid(streamNames, cfg.Stream):
		return nil, fmt.Errorf("new recorder: invalid stream %d", cfg.Stream)
	case len(cfg.MACKey) != MACKeySize:
		return nil, fmt.Errorf("new recorder: MAC key is %d bytes, want %d", len(cfg.MACKey), MACKeySize)
	case cfg.Rules == nil || cfg.Retain < 0 || cfg.Budget <= 0:
		return nil, fmt.Errorf("new recorder: rules, retain >= 0 and budget > 0 are required")
	}
	r := &Recorder{cfg: cfg, eng: newEngine(cfg.Rules), tail: ring{size: int(cfg.Retain)},
		red: newHashWorker(sha256.New(), nil, cfg.MACKey), headSum: make(chan hash.Hash, 1)}
	r.eng.failed = r.blocked
	if !canClone() {
		r.raw = newHashWorker(sha256.New(), nil, cfg.MACKey) // hashed apart from the first byte
	}
	if cfg.Retain == 0 {
		r.red.cloneAt(r.headSum) // the empty head is full already
	}
	return r, nil
}

// OverBudget reports whether more than the hard output budget has been
// observed; the caller then ends the group as output_limit_reaped.
func (r *Recorder) OverBudget() bool { return r.observed.Load() > uint64(r.cfg.Budget) }

// Write records p. It always consumes all of p and never fails, so that
// the pipe keeps draining until the process ends; a redactor failure is
// reported by Close (EVIDENCE_BLOCKED).
func (r *Recorder) Write(p []byte) (int, error) {
	if r.closed {
		panic("receipt: internal error: write after close")
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), MaxChunk)
		r.chunk(p[:k])
		p = p[k:]
	}
	return n, nil
}

func (r *Recorder) chunk(p []byte) {
	c := &Chunk{Index: r.chunks, RawBytes: uint64(len(p))}
	r.chunks++
	end := r.observed.Add(uint64(len(p)))
	r.pending = append(r.pending, c)
	r.pendEnd = append(r.pendEnd, end)
	if r.raw != nil {
		r.raw.write(p)
		r.raw.mark(c, fillRaw)
	}
	// A failure blocks the engine for good: it then takes nothing more,
	// and Close reports the failure.
	staged := len(r.red.stage.data)
	r.eng.write(p, r.emit)
	r.live(staged)
	if r.flushRed {
		r.flushRed = false
		r.red.flush()
	} else {
		r.red.maybeFlush()
	}
	if r.raw != nil {
		r.raw.maybeFlush()
	}
}

// part starts the raw stream's own digest at raw offset rawDone, before
// the first output that is not the raw bytes themselves (or at a
// redactor failure): everything before it was released verbatim, so the
// shared digest there is the raw stream's too. The raw digest starts as
// a copy of that state, taken in order on red's worker, and takes the raw
// bytes the engine still holds, with the ends of the chunks pending in
// them; each later write is added to it as it comes.
func (r *Recorder) part() {
	from := make(chan hash.Hash, 1)
	r.red.cloneAt(from)
	r.flushRed = true // raw's worker waits for the copy: the mark must not wait behind it
	r.raw = newHashWorker(nil, from, r.cfg.MACKey)
	buf := r.eng.buf
	held := buf[len(buf)-int(r.observed.Load()-r.rawDone):]
	off := r.rawDone
	for i, c := range r.pending {
		k := r.pendEnd[i] - off
		r.raw.write(held[:k])
		held, off = held[k:], r.pendEnd[i]
		r.raw.mark(c, fillRaw)
	}
	if len(held) > 0 {
		panic("receipt: internal error: raw bytes held past the last pending chunk")
	}
}

// blocked is called by the engine when it fails, before it drops what it
// holds: that is withheld from the redacted stream but not from the raw.
func (r *Recorder) blocked() {
	if r.raw == nil {
		r.part()
	}
}

// live hands Live the redacted output released since the redacted
// digest's staging held staged bytes: everything released is staged
// there, in order, so one call per write takes the place of one per
// piece the engine emitted (a placeholder splits a line in three).
func (r *Recorder) live(staged int) {
	if out := r.red.stage.data[staged:]; r.cfg.Live != nil && len(out) > 0 {
		r.cfg.Live(out)
	}
}

// emit takes released redacted output, closing every chunk whose raw end
// it reaches at the exact redacted offset where that chunk ends.
func (r *Recorder) emit(out []byte, raw int, verbatim bool) {
	if !verbatim && r.raw == nil {
		r.part()
	}
	if verbatim {
		for len(r.pending) > 0 && r.pendEnd[0] <= r.rawDone+uint64(len(out)) {
			k := r.pendEnd[0] - r.rawDone
			r.take(out[:k])
			out, r.rawDone = out[k:], r.rawDone+k
			r.finish()
		}
		r.take(out)
		r.rawDone += uint64(len(out))
		return
	}
	r.take(out)
	r.rawDone += uint64(raw)
	for len(r.pending) > 0 && r.pendEnd[0] <= r.rawDone {
		r.finish()
	}
}

func (r *Recorder) take(b []byte) {
	if len(b) == 0 {
		return
	}
	r.redTotal += uint64(len(b))
	if room := int(r.cfg.Retain) - len(r.head); room > 0 {
		k := min(room, len(b))
		r.head = append(r.head, b[:k]...)
		r.red.write(b[:k])
		b = b[k:]
		if k == room {
			r.red.cloneAt(r.headSum) // the head is full
		}
	}
	r.red.write(b)
	r.tail.write(b)
}

// retainedDigest is the SHA-256 of a full head and then tail: the
// redacted digest's state after the head, which the worker copies, plus
// the tail. Where the state cannot be copied the head is hashed again.
func (r *Recorder) retainedDigest(tail []byte) string {
	h := <-r.headSum
	if h == nil {
		h = sha256.New()
		h.Write(r.head)
	}
	h.Write(tail)
	return hex.EncodeToString(h.Sum(nil))
}

// finish closes the oldest pending chunk at the current redacted offset.
func (r *Recorder) finish() {
	c := r.pending[0]
	r.pending, r.pendEnd = r.pending[1:], r.pendEnd[1:]
	if r.raw == nil {
		r.red.mark(c, fillRedacted|fillRaw) // c ends where the streams are still one
	} else {
		r.red.mark(c, fillRedacted)
	}
	c.RedactedBytes, r.redChunk = r.redTotal-r.redChunk, r.redTotal
	if len(r.first) < keepChunks {
		r.first = append(r.first, c)
	}
	r.last[c.Index%keepChunks] = c
}

// Close releases what the redactor held back and returns the stream's
// evidence and retained bytes. After a redactor failure the evidence is
// still returned, truncated as evidence_blocked, with an EVIDENCE_BLOCKED
// error: the caller must not present the stream as complete.
func (r *Recorder) Close() (*Captured, error) {
	if r.closed {
		panic("receipt: internal error: recorder closed twice")
	}
	r.closed = true
	// A blocked engine releases nothing and returns its failure again.
	staged := len(r.red.stage.data)
	err := r.eng.run(true, r.emit)
	r.live(staged)
	r.red.end() // the workers drain their queues beside the tail's digest
	if r.raw != nil {
		r.raw.end() // after red: it may wait for red's copy
	}
	tail := r.tail.bytes()
	headFull := len(r.head) == int(r.cfg.Retain) // red was asked for its state there
	var retained string
	if headFull {
		retained = r.retainedDigest(tail)
	}
	r.red.wait()
	redSum := r.red.h.Sum(nil)
	rawSum := redSum
	if r.raw != nil {
		r.raw.wait()
		rawSum = r.raw.h.Sum(nil)
	}
	redacted := hex.EncodeToString(redSum)
	if !headFull {
		retained = redacted // the head that never filled is the whole stream
	}
	ev := StreamEvidence{
		Stream: r.cfg.Stream, RulesetID: r.cfg.Rules.ID(), ExactSecrets: r.cfg.Rules.Exact(),
		Chunks: r.chunks, ChunkRecords: r.records(),
		ObservedBytes: r.observed.Load(), RedactedBytes: r.redTotal,
		RetainedBytes: uint64(len(r.head) + len(tail)),
		WithheldBytes: r.observed.Load() - r.rawDone,
		Head:          Range{0, uint64(len(r.head))},
		Tail:          Range{r.redTotal - uint64(len(tail)), r.redTotal},
		Retain:        uint64(r.cfg.Retain), Budget: uint64(r.cfg.Budget),
		RawHMAC:        r.red.rawMAC(rawSum),
		RedactedSHA256: redacted,
		RetainedSHA256: retained,
		Redactions:     r.eng.hits(),
	}
	ev.DroppedBytes = ev.RedactedBytes - ev.RetainedBytes
	switch {
	case err != nil:
		ev.Truncation = TruncEvidenceBlocked
	case r.OverBudget():
		ev.Truncation = TruncOutputLimit
	case ev.DroppedBytes > 0:
		ev.Truncation = TruncRetention
	}
	if verr := ev.validate(); verr != nil {
		panic("receipt: internal error: " + verr.Error())
	}
	return &Captured{Evidence: ev, Head: r.head, Tail: tail}, err
}

// records returns the first and last keepChunks finished chunk records.
func (r *Recorder) records() []Chunk {
	out := make([]Chunk, 0, 2*keepChunks)
	for _, c := range r.first {
		out = append(out, *c)
	}
	n := uint64(len(r.first))
	done := r.chunks - uint64(len(r.pending))
	for i := max(n, done-min(done, keepChunks)); i < done; i++ {
		out = append(out, *r.last[i%keepChunks])
	}
	return out
}

// ring keeps the last size bytes written to it.
type ring struct {
	size int
	buf  []byte
	pos  int // next write position once buf is full
}

func (t *ring) write(b []byte) {
	if t.size == 0 || len(b) == 0 {
		return
	}
	if len(b) >= t.size {
		b = b[len(b)-t.size:]
	}
	if t.buf == nil {
		// The head is full by now: the tail will most likely fill too.
		t.buf = make([]byte, 0, t.size)
	}
	if room := t.size - len(t.buf); room > 0 {
		k := min(room, len(b))
		t.buf = append(t.buf, b[:k]...)
		b = b[k:]
	}
	for len(b) > 0 {
		k := copy(t.buf[t.pos:], b)
		b = b[k:]
		t.pos = (t.pos + k) % t.size
	}
}

func (t *ring) bytes() []byte {
	out := make([]byte, 0, len(t.buf))
	return append(append(out, t.buf[t.pos:]...), t.buf[:t.pos]...)
}
