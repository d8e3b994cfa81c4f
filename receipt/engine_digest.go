package receipt

import (
	"encoding/hex"
	"hash"
)

// hashWorker runs one running digest on its own goroutine, at most one
// batch behind the goroutine that feeds it: the raw HMAC and the SHA-256
// of the redacted stream each have one, so on two cores both hash passes
// run beside redaction. Each batch carries marks; a mark asks for the
// running digest at an exact offset into the batch, which fills in a
// chunk record. Two buffers exist per worker (the one being filled and the
// one being hashed), so memory stays bounded by flushAt plus what one
// Write can release. finish must be called; it ends the goroutine.
type hashWorker struct {
	h     hash.Hash
	field func(*Chunk) *string // which record field a mark fills in
	stage batch
	jobs  chan batch
	free  chan batch
	done  chan struct{}
}

// batch is staged bytes and the marks into them.
type batch struct {
	data  []byte
	marks []digestMark
}

// digestMark asks for the running digest after the first at staged bytes.
type digestMark struct {
	at int
	c  *Chunk
}

func newHashWorker(h hash.Hash, field func(*Chunk) *string) *hashWorker {
	w := &hashWorker{h: h, field: field, jobs: make(chan batch, 1), free: make(chan batch, 1), done: make(chan struct{})}
	w.free <- batch{}
	go w.run()
	return w
}

func (w *hashWorker) run() {
	defer close(w.done)
	for b := range w.jobs {
		off := 0
		for _, m := range b.marks {
			w.h.Write(b.data[off:m.at])
			off = m.at
			*w.field(m.c) = hex.EncodeToString(w.h.Sum(nil))
		}
		w.h.Write(b.data[off:])
		w.free <- batch{b.data[:0], b.marks[:0]}
	}
}

func (w *hashWorker) write(b []byte) { w.stage.data = append(w.stage.data, b...) }

// mark records c's digest at the current end of the staged stream.
func (w *hashWorker) mark(c *Chunk) {
	w.stage.marks = append(w.stage.marks, digestMark{len(w.stage.data), c})
}

// flushAt is how many staged bytes make a batch worth handing over.
const flushAt = 128 << 10

// maybeFlush flushes once a batch is worth the hand-over.
func (w *hashWorker) maybeFlush() {
	if len(w.stage.data) >= flushAt {
		w.flush()
	}
}

// flush hands what is staged to the worker and takes the other buffer,
// waiting for the worker to finish the previous batch if it has not.
func (w *hashWorker) flush() {
	if len(w.stage.data) == 0 && len(w.stage.marks) == 0 {
		return
	}
	w.jobs <- w.stage
	w.stage = <-w.free
}

// finish hashes what is left and ends the worker; afterwards every mark
// is filled in and h holds the digest of the whole stream.
func (w *hashWorker) finish() {
	w.flush()
	close(w.jobs)
	<-w.done
}
