package receipt

import (
	"encoding/hex"
	"hash"
	"sync"
)

// redDigest is the SHA-256 of the redacted stream, computed one batch
// behind redaction: the bytes one Write released are staged, then hashed
// on another goroutine while the next Write is redacted. Each chunk's
// digest is the running sum at the exact offset where the chunk ended.
// At most one batch is in flight and two staging buffers exist, so memory
// stays bounded by what one Write can release.
type redDigest struct {
	h       hash.Hash
	busy    sync.WaitGroup // the batch in flight
	stage   []byte         // released since the last flush
	marks   []digestMark
	spare   []byte // the buffers of the batch in flight, reused after it
	spareMk []digestMark
}

// digestMark asks for the running digest after the first at staged bytes.
type digestMark struct {
	at int
	c  *Chunk
}

func (d *redDigest) write(b []byte) { d.stage = append(d.stage, b...) }

// mark records c's digest at the current end of the redacted stream.
func (d *redDigest) mark(c *Chunk) { d.marks = append(d.marks, digestMark{len(d.stage), c}) }

// flush hashes what is staged: on another goroutine if async, else before
// it returns. Either way the previous batch is finished first, so bytes
// enter the digest in order. After flush(false) every mark is filled in.
func (d *redDigest) flush(async bool) {
	d.busy.Wait()
	data, marks := d.stage, d.marks
	d.stage, d.marks = d.spare[:0], d.spareMk[:0]
	d.spare, d.spareMk = data, marks
	if !async {
		d.hash(data, marks)
		return
	}
	d.busy.Go(func() { d.hash(data, marks) })
}

func (d *redDigest) hash(data []byte, marks []digestMark) {
	off := 0
	for _, m := range marks {
		d.h.Write(data[off:m.at])
		off = m.at
		m.c.RedactedSHA256 = hex.EncodeToString(d.h.Sum(nil))
	}
	d.h.Write(data[off:])
}
