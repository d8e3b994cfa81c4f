package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"warrant/broker/client"
	"warrant/broker/view"
	"warrant/wire"
)

// followTries bounds how many times in a row follow follows again, from
// the offsets it reached, a stream that failed without bringing anything.
const followTries = 3

// follow prints handle's redacted output as the broker releases it, on
// the daemon and on the embedded broker alike (both answer the agent
// socket's Follow), every byte in order, and returns the final status
// and what was printed. A stream that fails (the broker dropped a
// follower that did not read for its idle timeout, say) is followed
// again from the offsets reached: the broker kept what was not sent. An
// interrupt cancels the action and keeps following it: cancel is not
// abandon; a second one stops following, as it stops waitEnd. If
// following fails for good, the end is learnt by waiting instead, and
// the rest is left to `broker output --from`.
func (e *Env) follow(ctx context.Context, cl *client.Client, handle string, prog *progress) (*wire.Status, [2]view.Printed, error) {
	pr := &printer{out: e.Stdout, errw: e.Stderr, handle: handle, prog: prog, lineStart: [2]bool{true, true}}
	// A second interrupt, or a cancel that fails, stops the following at
	// once: the outcome is unknown here.
	fctx, abandon := context.WithCancel(context.Background())
	defer abandon()
	var unsubscribe context.CancelFunc
	var cancelErr error // read once cancelled is closed
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		var again context.Context
		again, unsubscribe, cancelErr = e.cancelInterrupted(cl, handle)
		context.AfterFunc(again, abandon)
		if cancelErr != nil {
			abandon()
		}
	})
	defer func() {
		if !stop() {
			<-cancelled
			e.unsubscribe(unsubscribe)
		}
	}()
	var st *wire.Status
	var err error
	for tries := 0; ; {
		from := pr.at
		st, err = cl.Follow(fctx, &wire.Follow{Handle: handle, StdoutFrom: from[0], StderrFrom: from[1]}, pr.chunk)
		if _, refused := err.(*wire.Error); err == nil || refused || fctx.Err() != nil {
			break
		}
		if pr.at != from {
			tries = 0
		} else if tries++; tries == followTries {
			break
		}
		time.Sleep(time.Duration(tries) * 100 * time.Millisecond)
	}
	if err != nil && fctx.Err() != nil {
		<-cancelled // abandoned by the cancel's goroutine or after it
		prog.clear()
		if cancelErr == nil {
			cancelErr = e.lost(handle, errors.New("interrupted again while following the cancelled action to its end"))
		}
		return nil, pr.printed, cancelErr
	}
	if _, refused := err.(*wire.Error); err != nil && !refused {
		prog.clear()
		fmt.Fprintf(e.Stderr, "warrant: live output of %s stopped (%s) at byte %d of stdout and %d of stderr; waiting for its end. "+
			"`broker output %s --stream stdout --from %d` prints the rest while the broker holds it\n", handle, FollowBroke(err), pr.at[0], pr.at[1], handle, pr.at[0])
		e.PrintCause(err)
		st, err = e.waitEnd(ctx, cl, handle)
	}
	prog.clear()
	return st, pr.printed, err
}

// FollowBroke says in plain words why a Follow that was not refused
// ended (client.Agent.Follow's error); the error itself is for --debug.
func FollowBroke(err error) string {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("the broker sent nothing for %s: it is stopped or overloaded", client.FollowSilence)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "the broker closed the connection"
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
		return "no broker answers any more"
	}
	return "the connection to the broker failed"
}

// printer writes a followed action's chunks to stdout and stderr, each
// stream's in order from its offset, and counts them.
type printer struct {
	out, errw io.Writer
	handle    string
	prog      *progress
	printed   [2]view.Printed
	at        [2]uint64 // the next offset of each stream
	lineStart [2]bool   // the last byte printed of each stream ended a line
}

func (p *printer) chunk(c *wire.OutputChunk) {
	if c.Stream == 0 {
		return // a heartbeat
	}
	k := int(c.Stream) - 1
	w := p.out
	if c.Stream == wire.Stderr {
		w = p.errw
	}
	end := c.Offset + c.NotStreamed + uint64(len(c.Data))
	if c.Offset > p.at[k] { // never sent: the broker sends gaps, but be sure
		p.gap(w, c.Stream, p.at[k], c.Offset)
	}
	if end <= p.at[k] {
		return // had it already (a resumed stream starts where the last one stopped)
	}
	from := max(c.Offset, p.at[k])
	if c.NotStreamed > 0 {
		p.gap(w, c.Stream, from, end)
		return
	}
	data := c.Data[from-c.Offset:]
	p.at[k] = end
	p.printed[k].Bytes += uint64(len(data))
	p.lineStart[k] = data[len(data)-1] == '\n'
	p.prog.write(w, data, len(data))
}

// gap marks bytes [from, to) of stream s as not streamed, on a line of
// their own, naming the command that prints what is still held of them.
func (p *printer) gap(w io.Writer, s wire.OutputStream, from, to uint64) {
	k := int(s) - 1
	p.at[k] = to
	p.printed[k].NotStreamed += to - from
	nl := ""
	if !p.lineStart[k] {
		nl = "\n"
	}
	p.lineStart[k] = true
	p.prog.write(w, fmt.Appendf(nil, "%s[… %d bytes not streamed (bytes %d–%d of %s, no longer held): see `broker output %s --stream %s --from %d` …]\n",
		nl, to-from, from, to, s, p.handle, s, from), 0)
}

// progress is the one-line indicator `broker run` keeps on a terminal's
// last line while it waits for approval or for the action: what it waits
// for, the time elapsed and the bytes of output seen, redrawn in place
// four times a second, erased before any output is printed and before the
// summary. It is drawn only when stderr is a terminal and --json is not
// given, and only while the cursor is at the start of a line (output
// that ends mid-line is never overwritten). A nil *progress draws nothing.
type progress struct {
	tty  io.Writer
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu        sync.Mutex
	what      string // "" while nothing is to be drawn
	last      string // what since counts from
	since     time.Time
	bytes     uint64
	shown     bool // the line is on the screen
	lineStart bool // the cursor is at the start of a line
}

// newProgress returns the indicator for stderr, or nil when it must not
// be drawn.
func newProgress(stderr io.Writer, jsonOut bool) *progress {
	f, ok := stderr.(*os.File)
	if jsonOut || !ok || !isTerminal(f) {
		return nil
	}
	p := &progress{tty: f, stop: make(chan struct{}), done: make(chan struct{}), lineStart: true}
	go p.loop()
	return p
}

// set says what is awaited from now on ("running", "waiting for approval
// of ar-…"), restarting the clock when it changes.
func (p *progress) set(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != what {
		p.last, p.since = what, time.Now()
	}
	p.what = what
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		if p.what != "" && p.lineStart {
			fmt.Fprintf(p.tty, "\r\x1b[Kwarrant: %s · %.1fs · %d bytes of output", p.what,
				time.Since(p.since).Seconds(), p.bytes)
			p.shown = true
		}
		p.mu.Unlock()
	}
}

// write erases the line, writes b to w, counts output bytes of it and
// notes where the cursor is.
func (p *progress) write(w io.Writer, b []byte, output int) {
	if p == nil {
		w.Write(b)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	w.Write(b)
	p.bytes += uint64(output)
	if f, ok := w.(*os.File); ok && len(b) > 0 && isTerminal(f) {
		p.lineStart = b[len(b)-1] == '\n'
	}
}

// erase takes the line off the screen. p.mu is held.
func (p *progress) erase() {
	if p.shown {
		fmt.Fprint(p.tty, "\r\x1b[K")
		p.shown = false
	}
}

// clear takes the line off the screen until the next set (of the same
// thing, the clock goes on).
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	p.what = ""
}

// end stops the indicator and erases it; it is not drawn again. It may be
// called more than once.
func (p *progress) end() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.stop) })
	<-p.done
	p.clear()
}
