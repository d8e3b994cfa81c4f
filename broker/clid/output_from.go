package clid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"warrant/broker/cli"

	"warrant/broker"
	"warrant/broker/client"
	"warrant/broker/internal/follow"
	"warrant/broker/view/receiptview"
	"warrant/wire"
)

// offsetFlag is --from: an offset in a redacted stream, and whether it
// was given.
type offsetFlag struct {
	n   uint64
	set bool
}

func (f *offsetFlag) String() string { return strconv.FormatUint(f.n, 10) }
func (f *offsetFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return errors.New("want a byte offset, 0 or more")
	}
	f.n, f.set = n, true
	return nil
}

// outputFrom prints stream s of an action from offset from on, to
// stdout: what the broker holds (Follow from the offset: its spill, and
// what the action still prints until its end), and where it holds
// nothing (its spill is gone, or no broker runs), what the receipt
// retained of those bytes. A range neither holds is named on stderr,
// and marked by a line in the output where bytes are printed on both
// sides of it. log is the receipt log as read before, or nil.
func outputFrom(e *cli.Env, log *broker.ReceiptLog, handle string, s wire.OutputStream, from uint64) error {
	o := &rangeOut{w: e.Stdout, s: s, at: from, log: log, handle: handle, state: e.State}
	spilled, fromSpill := uint64(0), false
	cl, err := client.Dial(e.State)
	if err == nil {
		defer cl.Close()
		f := &wire.Follow{Handle: handle, Stream: s}
		if s == wire.Stdout {
			f.StdoutFrom = from
		} else {
			f.StderrFrom = from
		}
		_, err = cl.Follow(context.Background(), f, func(c *wire.OutputChunk) {
			if c.Stream != s || o.failed != nil {
				return
			}
			if c.NotStreamed > 0 {
				o.fill(c.Offset, c.Offset+c.NotStreamed)
				return
			}
			o.data(c.Offset, c.Data)
			spilled += uint64(len(c.Data))
			fromSpill = true
		})
		var we *wire.Error
		if errors.As(err, &we) {
			return err
		}
		if err != nil {
			fmt.Fprintf(e.Stderr, "warrant: following %s broke off at byte %d (%s); the rest is what the receipt retained\n", handle, o.at, cli.FollowBroke(err))
			e.PrintCause(err)
		}
	} else {
		if o.receipt() == nil && o.failed == nil {
			return fmt.Errorf("no receipt has id or action %q, and no broker answers on %s (an action's output is kept in its receipt once it has ended)", handle, e.State)
		}
		fmt.Fprintf(e.Stderr, "warrant: no broker answers on %s, so none holds a spill of %s: printing what its receipt retained\n", e.State, handle)
	}
	if err != nil {
		o.fill(o.at, rest)
	}
	if o.failed != nil {
		return o.failed
	}
	if fromSpill {
		fmt.Fprintf(e.Stderr, "warrant: %s of %s: %d bytes from byte %d, from the broker\n", s, handle, spilled, from)
	}
	if o.fromReceipt > 0 {
		fmt.Fprintf(e.Stderr, "warrant: %s of %s: %d bytes from its receipt's head and tail (receipt %s, verified)\n", s, handle, o.fromReceipt, o.receiptID)
	}
	for _, m := range o.missing {
		which := fmt.Sprintf("bytes %d–%d", m[0], m[1])
		if m[1] == rest {
			which = fmt.Sprintf("bytes from %d on", m[0])
		}
		fmt.Fprintf(e.Stderr, "warrant: %s of %s are no longer held: a broker keeps the bytes a follower was not sent until %s after the action's end, "+
			"and only while it runs; the receipt retains the stream's head and tail\n", which, s, follow.ParkLinger)
	}
	return nil
}

// rest is the end of a range that runs to the end of its stream.
const rest = 1<<63 - 1

// rangeOut writes a stream's bytes from an offset on, in order, filling
// gaps from the receipt where it can.
type rangeOut struct {
	w       io.Writer
	s       wire.OutputStream
	at      uint64 // the next offset to print
	printed bool
	pending bool // bytes are missing since the last printed
	missing [][2]uint64
	failed  error

	log           *broker.ReceiptLog
	handle, state string
	retained      *receiptview.Retained // loaded at the first gap
	loaded        bool
	fromReceipt   uint64
	receiptID     string
}

// data prints b, the stream's bytes from offset off.
func (o *rangeOut) data(off uint64, b []byte) {
	if off > o.at { // never sent: the broker sends gaps, but be sure
		o.fill(o.at, off)
		o.miss(o.at, off)
	}
	if off+uint64(len(b)) <= o.at {
		return
	}
	b = b[o.at-off:]
	if o.pending && o.printed {
		fmt.Fprintf(o.w, "\n[… bytes %d–%d omitted: no longer held …]\n", o.missing[len(o.missing)-1][0], o.missing[len(o.missing)-1][1])
	}
	o.pending = false
	o.w.Write(b)
	o.printed = true
	o.at += uint64(len(b))
}

// fill prints what the receipt retained of bytes [from, to) (to past the
// end: the rest of the stream) and counts the rest as missing.
func (o *rangeOut) fill(from, to uint64) {
	r := o.receipt()
	if r == nil {
		o.miss(from, to)
		return
	}
	ev := &r.Captured.Evidence
	to = min(to, ev.RedactedBytes)
	if from >= to {
		return
	}
	if e := min(to, ev.Head.End); from < e {
		o.data(from, r.Captured.Head[from:e])
		o.fromReceipt += e - from
	}
	if lo, hi := max(from, ev.Head.End), min(to, ev.Tail.Start); lo < hi {
		o.miss(lo, hi)
	}
	if s := max(from, ev.Tail.Start); s < to {
		o.data(s, r.Captured.Tail[s-ev.Tail.Start:to-ev.Tail.Start])
		o.fromReceipt += to - s
	}
}

func (o *rangeOut) miss(from, to uint64) {
	if from >= to {
		return
	}
	if n := len(o.missing); n > 0 && o.missing[n-1][1] == from {
		o.missing[n-1][1] = to
	} else {
		o.missing = append(o.missing, [2]uint64{from, to})
	}
	o.pending = true
	o.at = to
}

// receipt is the stream's retained output from the action's verified
// receipt, or nil while it has none; the log is read again once if it
// was read before the action ended.
func (o *rangeOut) receipt() *receiptview.Retained {
	if o.loaded {
		return o.retained
	}
	o.loaded = true
	var err error
	if o.log == nil || receiptview.FindReceipt(o.log.Entries, o.log.Verify, o.handle) == nil {
		o.log, err = broker.ReadReceiptLog(context.Background(), o.state)
	}
	if err != nil {
		o.failed = err
		return nil
	}
	shown := receiptview.FindReceipt(o.log.Entries, o.log.Verify, o.handle)
	if shown == nil {
		return nil
	}
	streams, err := shown.Output()
	if err != nil {
		o.failed = err
		return nil
	}
	for i := range streams {
		if strings.EqualFold(streams[i].Captured.Evidence.Stream.String(), o.s.String()) {
			o.retained, o.receiptID = &streams[i], shown.Receipt.ID
		}
	}
	return o.retained
}
