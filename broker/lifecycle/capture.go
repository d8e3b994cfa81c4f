package lifecycle

import (
	"errors"
	"io"
	"os"
	"sync"
)

// capture drains one output pipe into its sink, counting every byte. It
// keeps reading after the sink fails, so the target never blocks on a full
// pipe, but writes nothing more to that sink.
type capture struct {
	f      *os.File
	sink   io.Writer
	budget int64
	over   func() // called once, when the count first exceeds budget

	done     chan struct{}
	n        uint64
	complete bool  // reached EOF
	sinkErr  error // the sink's first error; nothing is written after it
}

func newCapture(f *os.File, sink io.Writer, budget int64, over func()) *capture {
	c := &capture{f: f, sink: sink, budget: budget, over: over, done: make(chan struct{})}
	go c.run()
	return c
}

// captureRead is the most one read takes from a pipe (growPipe).
const captureRead = 256 << 10

// captureBufs holds the read buffers, so that each launch does not
// allocate and zero two of them.
var captureBufs = sync.Pool{New: func() any { b := make([]byte, captureRead); return &b }}

// pipeDefault is a pipe's capacity until growPipe: a read that takes
// this much found the pipe full, the target writing faster than the
// broker reads.
const pipeDefault = 64 << 10

func (c *capture) run() {
	defer close(c.done)
	budget := uint64(c.budget)
	bp := captureBufs.Get().(*[]byte)
	defer captureBufs.Put(bp)
	buf := *bp
	grown := false
	for {
		k, err := c.f.Read(buf)
		if k >= pipeDefault && !grown {
			growPipe(c.f) // only a stream that fills its pipe gets a bigger one
			grown = true
		}
		if k > 0 {
			before := c.n
			c.n += uint64(k)
			if c.sinkErr == nil {
				_, c.sinkErr = c.sink.Write(buf[:k])
			}
			if before <= budget && c.n > budget {
				c.over()
			}
		}
		if errors.Is(err, io.EOF) {
			c.complete = true
			return
		}
		if err != nil {
			return // deadline exceeded or closed: not complete
		}
	}
}
