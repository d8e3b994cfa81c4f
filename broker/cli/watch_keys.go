package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"warrant/broker/view"
	"warrant/wire"
)

// The keys of the watch queue (watch.go) on a terminal, and the
// decisions they make through the operator socket.
//
// A key answers only the question on the screen when it was read: each
// question records when it was put, and a key read before is dropped (a
// paste's tail, a key typed ahead, a key meant for a request that left);
// so is one read in the first readGrace of a question about another
// request than the last, or of a contract offer, which no one can have
// read yet (a double-tapped y). Each new question discards what was
// typed and not yet read (flush). Escape sequences (cursor and function
// keys, Alt chords) are read whole and ignored.

// reasonWatchDenied is the reason of a denial from the queue given none.
const reasonWatchDenied = "denied in the broker approvals queue"

// The terms the queue's c and `broker contracts enable` give a grant
// without --uses and --ttl.
const (
	EnableUses = 20
	EnableTTL  = 8 * time.Hour
)

// Keys of the queue.
const (
	keyCtrlC     = 0x03
	keyCtrlD     = 0x04
	keyBackspace = 0x08
	keyEsc       = 0x1b
	keyDelete    = 0x7f
)

// Timing of the keys.
const (
	readGrace  = 500 * time.Millisecond // a new request's question takes no key this early
	escapeWait = 30 * time.Millisecond  // an ESC followed by nothing this long is the Esc key
	keyPoll    = 100 * time.Millisecond // how often the reader looks whether to stop
)

// keysLine asks what to do with the request at the head of the queue; the
// keys are case-exact (Y, N, C… do nothing).
const keysLine = "  y/Enter 1 use · N Enter N uses · n deny · s skip · c contract · q quit > "

// usesWidth is how many digits a number of uses takes at most.
var usesWidth = len(strconv.Itoa(maxPromptUses))

// key is one key typed: a byte, or an escape sequence (seq), which the
// queue ignores; at is when it was read.
type key struct {
	b   byte
	seq bool
	at  time.Time
}

// ask shows the question about the head of the queue, with what was
// typed so far, unless it is shown already. A new question (another
// request, another mode, or asked anew after a decision) first shows the
// card of a request it is the first to ask about, unless that card ends
// the screen, and drops what was typed before it.
func (w *watcher) ask() {
	if !w.keys || w.asking {
		return
	}
	if len(w.queue) == 0 {
		if !w.idle {
			fmt.Fprintln(w.e.Stdout, "No request is pending now; new ones appear here as they arrive.")
			w.idle, w.lastCard = true, ""
		}
		w.mode, w.input, w.offer = askKey, nil, nil
		return
	}
	w.idle = false
	v := w.queue[0]
	if q := (question{id: v.ID, mode: w.mode}); q != (question{id: w.asked.id, mode: w.asked.mode}) || w.renew {
		if q.id != w.asked.id && w.lastCard != v.ID {
			w.e.writeCard(w.e.Stdout, v)
			w.lastCard = v.ID
		}
		w.flush()
		q.since = w.now()
		if q.id != w.asked.id || q.mode == askEnable {
			q.since = q.since.Add(readGrace)
		}
		w.asked, w.renew = q, false
	}
	switch w.mode {
	case askKey:
		if w.lastCard != v.ID {
			fmt.Fprintf(w.e.Stdout, "Next: %s  %s\n", v.ID, view.CommandLine(v.Identity.Executable.Requested, v.Identity.Argv))
			w.lastCard = v.ID
		}
		fmt.Fprint(w.e.Stdout, keysLine)
	case askReason:
		fmt.Fprintf(w.e.Stdout, "  Deny %s; the reason (Enter denies, Esc goes back): ", v.ID)
	case askEnable:
		fmt.Fprintf(w.e.Stdout, "  Enable contract %s here for %d uses over %s, approving %s? [y/N] ", view.Plain(w.offer.Name), EnableUses, Age(EnableTTL), v.ID)
	}
	w.e.Stdout.Write(w.input)
	w.asking = true
}

// key acts on one key typed; false: quit. Ctrl-C quits, and q or Ctrl-D
// where a key is asked for; a key read before the question on the screen
// was put (see above) does nothing.
func (w *watcher) key(ctx context.Context, k key) bool {
	switch {
	case k.seq:
		return true
	case k.b == keyCtrlC:
		return false
	case len(w.queue) == 0 || w.mode == askKey && (k.b == 'q' || k.b == keyCtrlD):
		return k.b != 'q' && k.b != keyCtrlD
	case !k.at.After(w.asked.since):
		return true
	}
	switch w.mode {
	case askReason:
		w.typeReason(ctx, k.b)
	case askEnable:
		w.mode = askKey
		w.endLine()
		if k.b == 'y' {
			w.enable(ctx)
		} else {
			w.say("Contract %s not enabled.", view.Plain(w.offer.Name))
		}
		w.offer = nil
	default:
		w.typeKey(ctx, k.b)
	}
	return true
}

// typeKey acts on a key asked for the head of the queue.
func (w *watcher) typeKey(ctx context.Context, k byte) {
	v := w.queue[0]
	switch {
	case k >= '0' && k <= '9' && len(w.input) < usesWidth:
		w.input = append(w.input, k)
		w.e.Stdout.Write([]byte{k})
	case k >= '0' && k <= '9':
		fmt.Fprint(w.e.Stdout, "\a") // no more digits: more than maxPromptUses
	case (k == keyBackspace || k == keyDelete) && len(w.input) > 0:
		w.input = w.input[:len(w.input)-1]
		fmt.Fprint(w.e.Stdout, "\b \b")
	case k == '\r' || k == '\n': // nothing typed: one use, as the question says
		uses := uint64(1)
		if len(w.input) > 0 {
			uses, _ = strconv.ParseUint(string(w.input), 10, 32)
		}
		w.input = nil
		if uses < 1 || uses > maxPromptUses {
			w.say("Give a number of uses from 1 to %d.", maxPromptUses)
			return
		}
		w.grant(ctx, v, uint32(uses))
	case k == 'y':
		w.input = nil
		w.grant(ctx, v, 1)
	case k == 'n':
		w.endLine()
		w.mode, w.input = askReason, nil
	case k == 's':
		w.input = nil
		w.queue = append(w.queue[1:], v)
		w.say("Skipped %s; it stays pending.", v.ID)
		w.renew = true
	case k == 'c':
		w.input = nil
		w.offerContract(ctx, v)
	case k == keyEsc && len(w.input) > 0:
		w.endLine()
		w.input = nil
	}
}

// typeReason edits the reason of a denial: Enter denies, Esc goes back.
func (w *watcher) typeReason(ctx context.Context, k byte) {
	switch {
	case k == '\r' || k == '\n':
		reason := strings.TrimSpace(string(w.input))
		if reason == "" {
			reason = reasonWatchDenied
		}
		w.mode, w.input = askKey, nil
		w.deny(ctx, w.queue[0], reason)
	case k == keyEsc:
		w.endLine()
		w.mode, w.input = askKey, nil
	case k == keyBackspace || k == keyDelete:
		if _, n := utf8.DecodeLastRune(w.input); n > 0 {
			w.input = w.input[:len(w.input)-n]
			fmt.Fprint(w.e.Stdout, "\b \b")
		}
	case k >= 0x20 && len(w.input) < 512:
		w.input = append(w.input, k)
		w.e.Stdout.Write([]byte{k})
	}
}

// grant approves request v for uses runs, for a lease as long as the
// `broker run` prompt's.
func (w *watcher) grant(ctx context.Context, v *wire.ApprovalView, uses uint32) {
	w.endLine()
	l, err := w.cl.ApproveContext(ctx, v.ID, uses, leaseTTL(uses))
	if err != nil {
		w.failed(v.ID, err)
		return
	}
	w.settled(v.ID)
	w.say("%s: granted %d use(s) on lease %s, until %s.", v.ID, l.UsesLeft, view.Plain(l.ID), time.Unix(l.ExpiresUnix, 0).Format(time.TimeOnly))
}

func (w *watcher) deny(ctx context.Context, v *wire.ApprovalView, reason string) {
	w.endLine()
	// An Alt chord may have eaten a character's first byte: only whole
	// runes go to the broker.
	reason = strings.ToValidUTF8(reason, "")
	if err := w.cl.DenyContext(ctx, v.ID, reason); err != nil {
		w.failed(v.ID, err)
		return
	}
	w.settled(v.ID)
	w.say("%s: denied (%s).", v.ID, view.Plain(reason))
}

// offerContract shows the library contract that covers request v and
// the earlier requests of its executable, and asks whether to enable it.
func (w *watcher) offerContract(ctx context.Context, v *wire.ApprovalView) {
	w.endLine()
	offers, err := untilDone(ctx, func() ([]wire.ContractOfferItem, error) { return w.cl.ContractOffer(v.ID) })
	if err != nil {
		w.failed(v.ID, err)
		return
	}
	if len(offers) == 0 {
		w.say("No contract of the library covers %s; decide it alone.", view.CommandLine(v.Identity.Executable.Requested, v.Identity.Argv))
		return
	}
	o := &offers[0]
	w.say("Contract %s: %s", view.Plain(o.Name), view.Plain(o.Description))
	for line := range strings.SplitSeq(strings.TrimRight(o.Usage, "\n"), "\n") {
		w.say("    %s", view.Plain(line))
	}
	w.say("  It covers these commands asked for here:")
	for _, c := range o.Covers {
		w.say("    %s", view.Plain(c))
	}
	w.mode, w.offer = askEnable, o
}

// enable grants the contract offered for the head of the queue, which
// settles it.
func (w *watcher) enable(ctx context.Context) {
	v, name := w.queue[0], w.offer.Name
	l, err := untilDone(ctx, func() (*wire.LeaseView, error) {
		return w.cl.EnableContract(&wire.ContractEnable{Request: v.ID, Name: name, Uses: EnableUses, TTLSeconds: uint32(EnableTTL / time.Second)})
	})
	if err != nil {
		w.failed(v.ID, err)
		return
	}
	w.settled(v.ID)
	w.say("Enabled contract %s as %s: %d use(s) until %s, for every command its grammar accepts here; %s is approved.",
		view.Plain(name), view.Plain(l.ID), l.UsesLeft, time.Unix(l.ExpiresUnix, 0).Format(time.TimeOnly), v.ID)
}

// untilDone is call, a request to the broker that takes no context, made
// off the key loop and given up on when ctx is done (Ctrl-C, a signal),
// so that the watch ends at once rather than after the reply timeout.
func untilDone[T any](ctx context.Context, call func() (T, error)) (T, error) {
	type reply struct {
		v   T
		err error
	}
	replied := make(chan reply, 1)
	go func() {
		defer recovered("a request to the broker", func(err error) { replied <- reply{err: err} })
		v, err := call()
		replied <- reply{v, err}
	}()
	select {
	case r := <-replied:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, errors.New("interrupted before the broker answered; it may have carried the request out: look before trying again")
	}
}

// settled removes request id, decided here, from the queue.
func (w *watcher) settled(id string) {
	w.decided[id] = true
	w.renew = true
	for i, v := range w.queue {
		if v.ID == id {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			break
		}
	}
}

// failed says why a decision about request id was not made, as a
// command's failure is said (failureWords); the request stays on the
// queue until a listing says what became of it, and is asked about anew.
func (w *watcher) failed(id string, err error) {
	w.say("%s: %s", id, failureWords(err))
	w.e.printAccount(err)
	w.renew = true
}

// end leaves the queue: the question's line ended, what is left said.
func (w *watcher) end() error {
	w.endLine()
	if len(w.queue) > 0 {
		fmt.Fprintf(w.e.Stdout, "Stopped watching; %d request(s) still pending.\n", len(w.queue))
	}
	return nil
}

// readKeys sends each key typed on terminal f (decodeKeys), until quit
// is closed; at end of input it closes the channel, and a failure to
// read it says on broke, so that the watch does not end without saying
// why. Ctrl-C also calls interrupt, which gives up a request in flight.
// It waits with readable, so that it stops without having consumed a key
// once quit is closed.
func readKeys(f *os.File, quit <-chan struct{}, interrupt func(), broke chan<- error) <-chan key {
	keys := make(chan key, 64)
	go func() {
		defer close(keys)
		defer recovered("reading the keys", func(err error) { broke <- err })
		send := func(ks []key) bool {
			for _, k := range ks {
				if !k.seq && k.b == keyCtrlC {
					interrupt()
				}
				select {
				case keys <- k:
				case <-quit:
					return false
				}
			}
			return true
		}
		fd := int(f.Fd())
		var buf [64]byte
		var held []byte // an escape sequence begun
		for {
			select {
			case <-quit:
				return
			default:
			}
			wait := keyPoll
			if len(held) > 0 {
				wait = escapeWait
			}
			ready, err := readable(fd, wait)
			if err != nil {
				broke <- fmt.Errorf("cannot read the keys typed: %w", err)
				return
			}
			if !ready {
				if len(held) > 0 { // nothing followed: what it is, whole
					ks, _ := decodeKeys(held, time.Now(), true)
					if held = nil; !send(ks) {
						return
					}
				}
				continue
			}
			n, err := f.Read(buf[:])
			ended := err != nil || n == 0
			ks, rest := decodeKeys(append(held, buf[:n]...), time.Now(), ended)
			if held = rest; !send(ks) {
				return
			}
			if ended {
				if err != nil && !errors.Is(err, io.EOF) {
					broke <- fmt.Errorf("cannot read the keys typed: %w", err)
				}
				return
			}
		}
	}()
	return keys
}

// decodeKeys splits b, read from the terminal at at, into keys: a byte is
// a key, and so is an escape sequence as a whole — a CSI (ESC [, then
// bytes from 0x20 to 0x3F, then one from 0x40 to 0x7E; the Linux
// console's ESC [ [ x), an SS3 (ESC O x), or ESC and one printable byte
// (an Alt chord) — which the queue ignores. ESC followed by a control
// byte is the Esc key, and the control byte a key of its own. A sequence
// b ends inside is returned as rest, to be completed by what is read
// next; but when whole (nothing follows soon), a lone ESC is the Esc key
// and the part of a sequence one ignored key.
func decodeKeys(b []byte, at time.Time, whole bool) (keys []key, rest []byte) {
	for len(b) > 0 {
		if b[0] != keyEsc {
			keys, b = append(keys, key{b: b[0], at: at}), b[1:]
			continue
		}
		n, complete := escapeLen(b)
		switch {
		case !complete && !whole:
			return keys, b
		case n == 1:
			keys = append(keys, key{b: keyEsc, at: at})
		default:
			keys = append(keys, key{seq: true, at: at})
		}
		b = b[n:]
	}
	return keys, nil
}

// escapeLen is the length of the escape sequence b starts with (1: ESC
// alone, the Esc key), and whether b holds all of it (else n is len(b)).
func escapeLen(b []byte) (n int, complete bool) {
	if len(b) < 2 {
		return len(b), false
	}
	if b[1] < 0x20 || b[1] == keyDelete {
		return 1, true
	}
	switch b[1] {
	case '[':
		i := 2
		if i < len(b) && b[i] == '[' { // ESC [ [ A: the Linux console's F1
			i++
		}
		for ; i < len(b); i++ {
			switch c := b[i]; {
			case c >= 0x40 && c <= 0x7e:
				return i + 1, true
			case c < 0x20 || c > 0x7e: // not of a CSI: it ended before
				return i, true
			}
		}
		return len(b), false
	case 'O':
		switch {
		case len(b) < 3:
			return len(b), false
		case b[2] < 0x20 || b[2] > 0x7e:
			return 2, true // Alt-O
		}
		return 3, true
	}
	return 2, true
}
