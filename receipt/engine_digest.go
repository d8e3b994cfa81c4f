package receipt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sync"
)

// hashWorker runs one running SHA-256 on its own goroutine, beside
// redaction: that of the redacted stream, which is also the raw stream's
// until the first redaction, and from there on the raw stream's own (see
// Recorder). The writer stages bytes and hands them over in batches of
// about flushAt bytes, through a queue of up to queueDepth batches. Each
// batch carries marks: a mark asks for the running digest at an exact
// offset into the batch, to fill in a chunk record, or for a copy of the
// digest's state there (the retained digest starts as one, and so does the
// raw digest where the streams part).
//
// The queue, not a double buffer, is what lets the writer and the worker
// run at once. A parked goroutine that is handed work is queued on the
// sender's CPU and runs when the sender blocks or an idle CPU wakes and
// takes it; on a small VM that wake-up takes about as long as hashing a
// batch, so a writer that waits for each batch in turn ends up taking
// turns with the worker instead of running beside it. With a queue the
// writer does not wait, and the worker, once awake, drains it.
//
// The goroutine starts with the first batch. A stream that never fills
// one (most of what short commands print) is hashed by end, on the
// caller's goroutine: starting, waking and joining the workers of an
// action's two streams for a few bytes cost it about 0.1 ms on a 2-core
// machine (the recorders' Close, p50, measured in the broker, when each
// stream had two). The raw worker, started where the streams part, also
// hands its first batch over only after the shared worker has the mark
// it waits for (Recorder.part).
//
// Batches are allocated as they are needed, so memory stays bounded by
// queueDepth+1 batches, each under flushAt bytes plus what one chunk
// staged (MaxChunk raw bytes, or once, where the streams part, the raw
// bytes the redactor held; for redacted output, what the chunk released,
// held-back bytes and placeholders included). end and then wait
// must be called; they end the goroutine.
type hashWorker struct {
	h       hash.Hash
	from    <-chan hash.Hash // where h comes from when it starts as nil: a copy of another worker's state
	key     []byte           // the output MAC key, for raw MACs of chunk records
	mac     hash.Hash        // HMAC-SHA256 under key, made when first needed
	stage   batch
	batches int // allocated so far, the staging one included
	started bool
	jobs    chan batch
	free    chan batch // room for every batch, so the worker never waits
	done    chan struct{}
}

const (
	// flushAt is how many staged bytes make a batch worth handing over:
	// four chunks, so that the hand-overs (a channel send and, as often
	// as not, a wake-up of the worker's thread) cost little beside the
	// hashing. At one chunk per batch they held a 2-core machine's
	// output throughput down by a sixth.
	flushAt = 4 * MaxChunk
	// queueDepth is how many batches may wait for or be in the worker.
	queueDepth = 4
)

// batch is staged bytes and the marks into them.
type batch struct {
	data  []byte
	marks []digestMark
}

// digestMark asks for the running digest after the first at staged bytes:
// into the fields fill names of c's record, or, when clone is set, as a
// copy of the digest's state sent there.
type digestMark struct {
	at    int
	c     *Chunk
	fill  fill
	clone chan<- hash.Hash
}

// fill names the chunk record fields a mark fills in.
type fill uint8

const (
	fillRedacted fill = 1 << iota // RedactedSHA256: the digest itself
	fillRaw                       // RawHMAC: the HMAC of the digest
)

// newHashWorker returns a worker running h, or, when h is nil, the copy
// of a digest's state that from will deliver (before any byte is hashed).
func newHashWorker(h hash.Hash, from <-chan hash.Hash, key []byte) *hashWorker {
	return &hashWorker{h: h, from: from, key: key, batches: 1,
		jobs: make(chan batch, queueDepth), free: make(chan batch, queueDepth+1), done: make(chan struct{})}
}

// ready takes the digest's starting state when it comes from elsewhere.
func (w *hashWorker) ready() {
	if w.h == nil {
		if w.h = <-w.from; w.h == nil {
			panic("receipt: internal error: a SHA-256 state that could be copied once could not be again")
		}
	}
}

func (w *hashWorker) run() {
	defer close(w.done)
	w.ready()
	for b := range w.jobs {
		w.hash(b)
		w.free <- batch{b.data[:0], b.marks[:0]}
	}
}

// hash adds b to the digest and fills in its marks. Each copy asked for
// has a channel with room for it, so hash never waits.
func (w *hashWorker) hash(b batch) {
	off := 0
	for _, m := range b.marks {
		w.h.Write(b.data[off:m.at])
		off = m.at
		if m.clone != nil {
			m.clone <- cloneOf(w.h)
			continue
		}
		sum := w.h.Sum(nil)
		if m.fill&fillRedacted != 0 {
			m.c.RedactedSHA256 = hex.EncodeToString(sum)
		}
		if m.fill&fillRaw != 0 {
			m.c.RawHMAC = w.rawMAC(sum)
		}
	}
	w.h.Write(b.data[off:])
}

// rawMAC is the keyed digest of a raw stream whose SHA-256 is sum:
// HMAC-SHA256 under the output key of sum.
func (w *hashWorker) rawMAC(sum []byte) string {
	if w.mac == nil {
		w.mac = hmac.New(sha256.New, w.key)
	}
	w.mac.Reset()
	w.mac.Write(sum)
	return hex.EncodeToString(w.mac.Sum(nil))
}

// cloneOf copies h's state, or returns nil where the build's hash cannot
// be copied (GOFIPS140=v1.0.0).
func cloneOf(h hash.Hash) hash.Hash {
	if c, ok := h.(hash.Cloner); ok {
		if h, err := c.Clone(); err == nil {
			return h
		}
	}
	return nil
}

// canClone reports whether this build's SHA-256 can copy its state.
var canClone = sync.OnceValue(func() bool { return cloneOf(sha256.New()) != nil })

func (w *hashWorker) write(b []byte) { w.stage.data = append(w.stage.data, b...) }

// mark asks for c's fields f at the current end of the staged stream.
func (w *hashWorker) mark(c *Chunk, f fill) {
	w.stage.marks = append(w.stage.marks, digestMark{at: len(w.stage.data), c: c, fill: f})
}

// cloneAt asks for a copy of the state at the current end of the staged
// stream, sent to to (nil where the state cannot be copied); to must
// have room for it.
func (w *hashWorker) cloneAt(to chan<- hash.Hash) {
	w.stage.marks = append(w.stage.marks, digestMark{at: len(w.stage.data), clone: to})
}

// maybeFlush flushes once a batch is worth the hand-over.
func (w *hashWorker) maybeFlush() {
	if len(w.stage.data) >= flushAt {
		w.flush()
	}
}

// flush queues what is staged and takes an empty batch: a returned one if
// there is one, else a new one while fewer than queueDepth+1 exist, else
// the next one the worker returns. The send waits only while queueDepth
// batches are queued and the worker has taken none of them yet.
func (w *hashWorker) flush() {
	if !w.started {
		w.started = true
		go w.run()
	}
	w.jobs <- w.stage
	select {
	case w.stage = <-w.free:
	default:
		if w.batches <= queueDepth {
			w.batches++
			w.stage = batch{data: make([]byte, 0, flushAt+MaxChunk)}
		} else {
			w.stage = <-w.free
		}
	}
}

// end queues what is staged as the last batch, taking no new one, and
// lets the worker run out; without a worker it hashes the batch itself.
func (w *hashWorker) end() {
	switch {
	case !w.started:
		w.ready()
		w.hash(w.stage)
		close(w.done)
	case len(w.stage.data) > 0 || len(w.stage.marks) > 0:
		w.jobs <- w.stage
	}
	w.stage = batch{}
	close(w.jobs)
}

// wait returns once the worker has ended; afterwards every mark is filled
// in and h holds the digest of the whole stream.
func (w *hashWorker) wait() { <-w.done }
