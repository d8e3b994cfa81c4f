package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// decisionBudget is how long one approval_wait may block. A decision is
// answered at once whatever the budget, and an interrupt abandons the
// call in flight; the budget only sets how often the wait is renewed.
const decisionBudget = time.Second

// Reasons `broker run` gives the broker for a denial it makes.
const (
	reasonPromptDenied = "denied at the broker run prompt"
	reasonCancelled    = "requester cancelled"
)

// decision is what the broker answered about a request: its state
// (never pending) or why it could not say.
type decision struct {
	st  *wire.ApprovalState
	err error
}

// awaitDecision waits, through the broker (approval_wait), until request
// id is no longer pending, the broker fails, or quit is closed (then it
// returns a nil state and error); ctx done abandons the wait in flight
// too.
func awaitDecision(ctx context.Context, cl *client.Client, id string, quit <-chan struct{}) decision {
	for {
		st, err := cl.ApprovalWaitContext(ctx, id, decisionBudget)
		if ctx.Err() != nil {
			return decision{}
		}
		if err != nil || st.State != wire.RequestPending {
			return decision{st, err}
		}
		select {
		case <-quit:
			return decision{}
		default:
		}
	}
}

// prompt shows the card of request v on the terminal and asks how many
// runs to approve (y: one; a number: that many, the rest kept on the
// lease), while waiting for a decision made elsewhere: whichever
// comes first decides. It returns nil once the request is approved (the
// caller submits again, on its lease), or why nothing may run: denied
// here (n, an empty line or Ctrl-D) or elsewhere, expired, or withdrawn
// because the run was interrupted (Ctrl-C: denied as "requester
// cancelled", CANCELLED). What it prints is what the broker answered.
func (e *Env) prompt(ctx context.Context, cl *client.Client, v *wire.ApprovalView) error {
	id := v.ID
	e.writeCardRows(e.Stderr, v) // the question is the card's last row
	fmt.Fprint(e.Stderr, "Approve exactly this command? y for one run, a number for that many [y/N] ")
	quit := make(chan struct{})
	stop := sync.OnceFunc(func() { close(quit) })
	defer stop()
	// Not ctx: after an interrupt, the withdrawal still reads the decision.
	waiting, abandon := context.WithCancel(context.Background())
	defer abandon()
	decided := make(chan decision, 1)
	go func() { decided <- awaitDecision(waiting, cl, id, quit) }()
	answered := make(chan answer, 1)
	go func() { answered <- readAnswer(os.Stdin, quit) }()

	by := "elsewhere"
	var d decision
	select {
	case d = <-decided:
		fmt.Fprintln(e.Stderr) // the question stays unanswered: end its line
	case a := <-answered:
		if a.err != nil {
			return a.err
		}
		if a.eof {
			fmt.Fprintln(e.Stderr) // Ctrl-D ends no line of its own
		}
		var lease *wire.LeaseView
		var err error
		if a.uses > 0 {
			lease, err = cl.ApproveContext(ctx, id, a.uses, leaseTTL(a.uses))
		} else {
			err = cl.DenyContext(ctx, id, reasonPromptDenied)
		}
		var refused *wire.Error
		switch {
		case err == nil:
			by = "at the prompt"
		case ctx.Err() != nil || !errors.As(err, &refused):
			// Interrupted (before the answer was sent or after), or no
			// answer came: the decision is not waited for either.
			abandon()
			stop()
			<-decided
			return unanswered(err, id)
		default:
			stop() // refused here: the broker says whether it was decided elsewhere just before
		}
		defer context.AfterFunc(ctx, abandon)() // an interrupt ends the wait for the decision too
		if d = <-decided; d.st == nil && d.err == nil {
			if err == nil && ctx.Err() != nil {
				what := "denying it here"
				if lease != nil {
					what = fmt.Sprintf("granting it %d use(s) here (lease %s, unused)", a.uses, lease.ID)
				}
				return wire.Errorf(wire.CodeCancelled, "interrupted at the prompt after %s: approval request %s; nothing ran", what, id)
			}
			return err // still pending, and this answer was refused (an inactive goal, …)
		}
	case <-ctx.Done():
		fmt.Fprintln(e.Stderr)
		if err := cl.Deny(id, reasonCancelled); err != nil {
			return wire.Errorf(wire.CodeCancelled, "interrupted at the prompt; withdrawing approval request %s failed: %v", id, err)
		}
		if d = <-decided; d.err == nil && d.st.State == wire.RequestApproved {
			return wire.Errorf(wire.CodeCancelled, "interrupted at the prompt; approval request %s had just been approved elsewhere "+
				"(lease %s, unused): nothing ran", id, d.st.LeaseID)
		}
		return wire.Errorf(wire.CodeCancelled, "interrupted at the prompt: approval request %s was withdrawn (denied: %s); nothing ran", id, reasonCancelled)
	}
	if d.err != nil {
		return d.err
	}
	return e.decided(d.st, by)
}

// decided says what became of a request that is no longer pending and
// returns nil if it was approved.
func (e *Env) decided(st *wire.ApprovalState, by string) error {
	switch st.State {
	case wire.RequestApproved:
		fmt.Fprintf(e.Stderr, "warrant: approval request %s was approved %s: lease %s\n", st.RequestID, by, st.LeaseID)
		return nil
	case wire.RequestDenied:
		return wire.Errorf(wire.CodeApprovalDenied, "approval request %s was denied %s (%s)", st.RequestID, by, st.Reason)
	}
	return wire.Errorf(wire.CodeIOFailed, "approval request %s expired: %s", st.RequestID, st.Reason)
}

// answer is one line typed at the prompt: the uses granted, 0 to deny.
type answer struct {
	uses uint32
	eof  bool
	err  error
}

// maxPromptUses bounds the uses one answer at the prompt grants.
const maxPromptUses = 1000

// leaseTTL is how long a lease granted at the prompt lasts: ten minutes
// for the one run that waits, an hour for more.
func leaseTTL(uses uint32) time.Duration {
	if uses == 1 {
		return 10 * time.Minute
	}
	return time.Hour
}

// readAnswer reads one line from the terminal f: y or yes approves one
// use, a number from 1 to maxPromptUses that many, anything else denies,
// and end of file (Ctrl-D) denies. It polls, so
// that it stops without having consumed anything once quit is closed.
func readAnswer(f *os.File, quit <-chan struct{}) answer {
	fd := int(f.Fd())
	for {
		select {
		case <-quit:
			return answer{err: errors.New("the prompt was closed")}
		default:
		}
		ready, err := readable(fd, 100*time.Millisecond)
		if err != nil {
			return answer{err: fmt.Errorf("read the answer: %w", err)}
		}
		if !ready {
			continue
		}
		var line [256]byte
		k, err := f.Read(line[:])
		if k == 0 {
			return answer{eof: true}
		}
		if err != nil {
			return answer{err: fmt.Errorf("read the answer: %w", err)}
		}
		a := strings.ToLower(strings.TrimSpace(string(line[:k])))
		if a == "y" || a == "yes" {
			return answer{uses: 1}
		}
		if n, err := strconv.ParseUint(a, 10, 32); err == nil && n >= 1 && n <= maxPromptUses {
			return answer{uses: uint32(n)}
		}
		return answer{}
	}
}
