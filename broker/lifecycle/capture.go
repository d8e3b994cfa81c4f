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

// captureBufs holds the 64 KiB read buffers (a pipe's default capacity),
// so that each launch does not allocate and zero two of them.
var captureBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

func (c *capture) run() {
	defer close(c.done)
	budget := uint64(c.budget)
	bp := captureBufs.Get().(*[]byte)
	defer captureBufs.Put(bp)
	buf := *bp
	for {
		k, err := c.f.Read(buf)
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
