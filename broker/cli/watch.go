package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"warrant/broker/client"
	"warrant/broker/view"
	"warrant/wire"
)

// `broker approvals --watch`: the queue of pending approval requests,
// followed live. The operator socket has no wait for a request not yet
// made (approval_wait follows one request by its id), so the queue lists
// the pending requests every watchPoll; what is decided here is shown at
// once. A broker that does not answer (none yet, stopped, busy) is tried
// again after a backoff that doubles up to reconnectMax, until it
// answers; why it does not is said once.
const (
	watchPoll    = 300 * time.Millisecond
	reconnectMax = 5 * time.Second
	watchPages   = 8 // pages of pending requests the queue holds at most
)

// snapshot is one listing of the queue: the pending requests, oldest
// first, and those that ended last, by id, from the broker cl answers
// for; or why the broker did not answer.
type snapshot struct {
	cl      *client.Client
	pending []wire.ApprovalView
	ended   map[string]*wire.ApprovalView
	err     error
}

// queueMode is what the line under the queue asks for.
type queueMode int

const (
	askKey    queueMode = iota // a key, or the digits of a number of uses
	askReason                  // the reason of a denial
	askEnable                  // whether to enable the contract offered
)

// question is the line under the queue: what it asks of which request,
// and since when a key may answer it (watch_keys.go).
type question struct {
	id    string
	mode  queueMode
	since time.Time
}

// decider makes the decisions of the queue: a *client.Client, or a
// test's fake.
type decider interface {
	ApproveContext(ctx context.Context, requestID string, uses uint32, ttl time.Duration) (*wire.LeaseView, error)
	DenyContext(ctx context.Context, requestID, reason string) error
	ContractOffer(requestID string) ([]wire.ContractOfferItem, error)
	EnableContract(m *wire.ContractEnable) (*wire.LeaseView, error)
}

// watcher is the queue on the screen.
type watcher struct {
	e        *Env
	cl       decider              // nil until the broker first answers
	keys     bool                 // on a terminal: keys decide
	flush    func()               // discards what was typed and not yet read
	now      func() time.Time     // the clock keys are read by
	queue    []*wire.ApprovalView // pending, the head asked about
	decided  map[string]bool      // decided here, until no listing shows them pending
	lastCard string               // the request whose card ends the screen
	asked    question             // the question last put
	renew    bool                 // put it anew: keys typed before are dropped
	mode     queueMode
	input    []byte // digits or reason typed so far
	offer    *wire.ContractOfferItem
	asking   bool   // the question line is on the screen, unended
	idle     bool   // the screen says no request is pending
	downWhy  string // why the broker did not answer the last listing, as said
}

func newWatcher(e *Env, keys bool) *watcher {
	return &watcher{e: e, keys: keys, flush: func() {}, now: time.Now, decided: map[string]bool{}, idle: true}
}

// watch follows the queue until q, Ctrl-C or a signal. On a terminal a
// key decides the request at the head; elsewhere each new request is
// printed and nothing is decided. It starts whether or not a broker
// answers, and waits for one.
func (e *Env) watch() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, interrupt := context.WithCancel(ctx) // Ctrl-C, typed as a byte in key mode
	defer interrupt()
	out, _ := e.Stdout.(*os.File)
	w := newWatcher(e, isTerminal(os.Stdin) && out != nil && isTerminal(out))
	broke := make(chan error, 2) // a goroutine's end: a failure to read the keys, a panic
	var keys <-chan key
	if w.keys {
		restore, err := keyMode(os.Stdin)
		if err != nil {
			return err
		}
		defer restore()
		quit := make(chan struct{})
		defer close(quit)
		keys = readKeys(os.Stdin, quit, interrupt, broke)
		w.flush = func() { flushInput(os.Stdin) }
		fmt.Fprintf(e.Stdout, "Watching the approval requests of %s; each appears as it arrives. q quits.\n", view.Plain(e.State))
	} else {
		fmt.Fprintf(e.Stdout, "Watching the approval requests of %s.\n", view.Plain(e.State))
		fmt.Fprintln(e.Stderr, "broker approvals --watch: not on a terminal, so it prints each request as it arrives and decides nothing "+
			"(broker approve and broker deny decide)")
	}
	snaps := make(chan snapshot)
	go pollQueue(ctx, e.Dial, snaps, broke)
	for {
		select {
		case <-ctx.Done():
			return w.end()
		case err := <-broke:
			w.endLine()
			return err
		case s := <-snaps:
			if err := w.update(s); err != nil {
				w.endLine()
				return err
			}
		case k, ok := <-keys:
			if !ok { // end of input, or the reader failed: then say why
				select {
				case err := <-broke:
					w.endLine()
					return err
				default:
				}
			}
			if !ok || !w.key(ctx, k) {
				return w.end()
			}
		}
		w.ask()
	}
}

// recovered, deferred in a goroutine of the watch, gives a panic of it to
// report as an error, so that the watch ends the usual way (the terminal
// restored) and says why.
func recovered(what string, report func(error)) {
	if r := recover(); r != nil {
		report(fmt.Errorf("%s stopped on a bug in broker: %v", what, r))
	}
}

// pollQueue lists the queue every watchPoll and sends each listing on
// out, until ctx is done; it dials the broker until one answers, and
// after a failure waits longer each time, up to reconnectMax.
func pollQueue(ctx context.Context, dial func() (*client.Client, error), out chan<- snapshot, broke chan<- error) {
	defer recovered("following the queue", func(err error) { broke <- err })
	var cl *client.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	backoff := watchPoll
	for {
		var s snapshot
		if cl == nil {
			cl, s.err = dial()
		}
		if cl != nil {
			s = listQueue(cl)
			if s.err != nil {
				// Why it does not answer: a broker that cannot be dialled
				// says it best (none running, not yours).
				if probe, err := dial(); err != nil {
					s.err = err
				} else {
					probe.Close()
				}
			}
		}
		select {
		case out <- s:
		case <-ctx.Done():
			return
		}
		wait := watchPoll
		if s.err != nil {
			backoff = min(2*backoff, reconnectMax)
			wait = backoff
		} else {
			backoff = watchPoll
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
	}
}

// listQueue lists the pending requests, a page after the other, and the
// requests that ended last (the last page's tail).
func listQueue(cl *client.Client) snapshot {
	s := snapshot{cl: cl, ended: map[string]*wire.ApprovalView{}}
	q := wire.List{Kind: wire.ListApprovals}
	for range watchPages {
		l, err := cl.ListPage(q)
		if err != nil {
			return snapshot{err: err}
		}
		for i := range l.Approvals {
			if v := &l.Approvals[i]; v.State == wire.RequestPending {
				s.pending = append(s.pending, *v)
			} else {
				s.ended[v.ID] = v
			}
		}
		if !l.Truncated || len(l.Approvals) == 0 {
			break
		}
		q.After = l.Approvals[len(l.Approvals)-1].ID
	}
	return s
}

// update brings the queue to listing s: a request no longer pending
// leaves it with a note, a new one joins it with its card. A broker that
// did not answer (IO_FAILED, BUSY) is waited for, why said once; any
// other refusal ends the watch.
func (w *watcher) update(s snapshot) error {
	if s.err != nil {
		var we *wire.Error
		if !errors.As(s.err, &we) || we.Code != wire.CodeIOFailed && we.Code != wire.CodeBusy {
			return s.err
		}
		if why := plainly(we.Code.String(), we.Message); why != w.downWhy {
			w.say("The broker does not answer; reconnecting until it does: %s", why)
			w.downWhy = why
		}
		return nil
	}
	if s.cl != nil && w.cl == nil {
		w.cl = s.cl
	}
	if w.downWhy != "" {
		w.say("The broker answers.")
		w.downWhy = ""
	}
	pending := map[string]bool{}
	for i := range s.pending {
		pending[s.pending[i].ID] = true
	}
	for id := range w.decided {
		if !pending[id] {
			delete(w.decided, id)
		}
	}
	kept := w.queue[:0]
	for i, v := range w.queue {
		if pending[v.ID] {
			kept = append(kept, v)
			continue
		}
		end := "."
		if i == 0 {
			// What was asked of it, and typed for it, is moot; the next
			// head is asked anew, with its card.
			w.mode, w.input, w.offer = askKey, nil, nil
			if w.keys && w.asked.id == v.ID {
				end = "; nothing was decided here."
			}
		}
		w.say("%s%s", leftNote(v.ID, s.ended[v.ID]), end)
	}
	w.queue = kept
	for i := range s.pending {
		v := &s.pending[i]
		if w.decided[v.ID] || w.queued(v.ID) {
			continue
		}
		w.queue = append(w.queue, v)
		w.endLine()
		w.e.writeCard(w.e.Stdout, v)
		w.lastCard = v.ID
	}
	return nil
}

// leftNote says what became of request id, which left the queue, in a
// sentence without its full stop; v is its listing, nil when the listing
// no longer shows it.
func leftNote(id string, v *wire.ApprovalView) string {
	switch {
	case v == nil:
		return id + " is no longer pending"
	case v.State == wire.RequestApproved:
		return id + " was approved elsewhere"
	case v.State == wire.RequestDenied:
		return fmt.Sprintf("%s was denied elsewhere: %s", id, view.Plain(v.Reason))
	}
	return fmt.Sprintf("%s expired: %s", id, view.Plain(v.Reason))
}

func (w *watcher) queued(id string) bool {
	for _, v := range w.queue {
		if v.ID == id {
			return true
		}
	}
	return false
}

// say prints one line of news, below the question if one is shown. What
// the broker or a request brings is passed through view.Plain by the caller;
// the line as a whole goes through it too, so that no byte of it reaches
// the terminal as is.
func (w *watcher) say(format string, a ...any) {
	w.endLine()
	fmt.Fprintln(w.e.Stdout, view.Plain(fmt.Sprintf(format, a...)))
	w.lastCard = ""
}

// endLine ends the question's line, so that what follows starts a line
// of its own; ask shows the question again.
func (w *watcher) endLine() {
	if w.asking {
		fmt.Fprintln(w.e.Stdout)
		w.asking = false
	}
}
