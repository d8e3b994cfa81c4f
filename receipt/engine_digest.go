package receipt

import (
	"encoding/hex"
	"hash"
)

// hashWorker runs one running digest on its own goroutine: the HMAC of the
// raw stream and the SHA-256 of the redacted stream each have one, so that
// both hash passes run beside redaction, on as many cores as there are.
// The writer stages bytes and hands them over in batches of about flushAt
// bytes, through a queue of up to queueDepth batches. Each batch carries
// marks: a mark asks for the running digest at an exact offset into the
// batch, to fill in a chunk record, or for a copy of the digest's state
// there (the retained digest starts as one).
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
// caller's goroutine: starting, waking and joining the four workers of an
// action's two streams for a few bytes cost it about 0.1 ms on a 2-core
// machine (the recorders' Close, p50, measured in the broker).
//
// Batches are allocated as they are needed, so memory stays bounded by
// queueDepth+1 batches, each under flushAt bytes plus what one chunk
// staged (MaxChunk raw bytes; for redacted output, what the chunk
// released, held-back bytes and placeholders included). end and then wait
// must be called; they end the goroutine.
type hashWorker struct {
	h       hash.Hash
	field   func(*Chunk) *string // the chunk record field a mark fills in
	clone   chan hash.Hash       // the copy a clone mark asks for
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
// into c's record, or, when c is nil, as a copy of the digest's state.
type digestMark struct {
	at int
	c  *Chunk
}

func newHashWorker(h hash.Hash, field func(*Chunk) *string) *hashWorker {
	w := &hashWorker{h: h, field: field, batches: 1, clone: make(chan hash.Hash, 1),
		jobs: make(chan batch, queueDepth), free: make(chan batch, queueDepth+1), done: make(chan struct{})}
	return w
}

func (w *hashWorker) run() {
	defer close(w.done)
	for b := range w.jobs {
		w.hash(b)
		w.free <- batch{b.data[:0], b.marks[:0]}
	}
}

// hash adds b to the digest and fills in its marks. The one copy a
// stream may ask for fits in clone's buffer, so hash never waits.
func (w *hashWorker) hash(b batch) {
	off := 0
	for _, m := range b.marks {
		w.h.Write(b.data[off:m.at])
		off = m.at
		if m.c != nil {
			*w.field(m.c) = hex.EncodeToString(w.h.Sum(nil))
		} else {
			w.clone <- cloneOf(w.h)
		}
	}
	w.h.Write(b.data[off:])
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

func (w *hashWorker) write(b []byte) { w.stage.data = append(w.stage.data, b...) }

// mark records c's digest at the current end of the staged stream; with
// a nil c, it asks for a copy of the state there, to be taken from clone.
// At most one copy may be asked for.
func (w *hashWorker) mark(c *Chunk) {
	w.stage.marks = append(w.stage.marks, digestMark{len(w.stage.data), c})
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
