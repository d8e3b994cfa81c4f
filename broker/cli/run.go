package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"warrant/broker/client"
	"warrant/broker/view"
	"warrant/wire"
)

// Exit statuses of `broker run` (docs/architecture.md §3.2). Outcomes the
// architecture leaves open get their own codes so that exit code, signal,
// timeout, cancel and refusal stay distinct.
const (
	exitUnknown     = 123 // outcome unknown
	exitTimedOut    = 124 // timed_out_reaped, as coreutils timeout
	exitNotExecuted = 125 // any refusal, usage error or drift, as docker run
	exitCannotExec  = 126 // spawn_failed other than "not found"
	exitNotFound    = 127 // EXECUTABLE_NOT_FOUND
	exitOutputLimit = 122 // output_limit_reaped
	exitCancelled   = 130 // cancelled_reaped, as an interrupted shell command
)

// exitStatus is an error that only carries the status Main returns.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// runOptions are the flags of `broker run`.
type runOptions struct {
	workspace, cwd, profile, session, goal string
	callID                                 string
	approve                                bool
	embedded                               brokerOptions // for the embedded broker
}

func runRun(e *env, args []string) error {
	var o runOptions
	e.fs.StringVar(&o.workspace, "workspace", "", "the workspace root (default: the current directory)")
	e.fs.StringVar(&o.cwd, "cwd", ".", "the working directory, relative to the workspace")
	e.fs.StringVar(&o.profile, "profile", "short", "short, standard or long")
	e.fs.StringVar(&o.session, "session", "", "the agent session")
	e.fs.StringVar(&o.goal, "goal", "", "the goal (default: the default goal)")
	e.fs.StringVar(&o.callID, "call-id", "", "make the submit idempotent: the same ID again in the session never starts a second run")
	e.fs.StringVar(&o.embedded.launcher, "launcher", "", "the launcher, when no daemon answers (default $WARRANT_LAUNCHER or beside this binary)")
	e.brokerFlags(&o.embedded)
	e.fs.BoolVar(&o.approve, "approve", false, "grant one use through the operator channel if approval is needed")
	dash := slices.Index(args, "--")
	if dash < 0 || dash == len(args)-1 {
		return usageError{"put the command after --"}
	}
	if _, err := e.parse(args[:dash], 0); err != nil {
		return err
	}
	argv := args[dash+1:]
	profile, err := wire.ParseEnum[wire.Profile](o.profile)
	if err != nil {
		return usageError{fmt.Sprintf("--profile must be short, standard or long, not %q", o.profile)}
	}
	if o.workspace == "" {
		if o.workspace, err = os.Getwd(); err != nil {
			return err
		}
	}
	if o.workspace, err = filepath.Abs(o.workspace); err != nil {
		return err
	}
	req := wire.ActionRequest{Executable: argv[0], Argv: argv[1:], Cwd: o.cwd, Profile: profile,
		Goal: o.goal, Session: o.session}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cl, d, err := e.connect(ctx, o.embedded, nil)
	if err != nil {
		return err
	}
	defer func() {
		cl.Close()
		if d != nil {
			d.stop()
		}
	}()
	prog := newProgress(e.stderr, e.json)
	defer prog.end()
	handle, err := e.submitApproved(ctx, cl, o.workspace, req, o.callID, o.approve, prog)
	if err != nil {
		prog.end()
		return e.report(view.Ending{Err: err}, nil)
	}
	if e.json {
		st, err := waitEnd(ctx, cl, handle)
		return e.report(view.Ending{Handle: handle, Status: st, Err: err}, nil)
	}
	prog.set("running " + handle)
	st, printed, err := e.follow(ctx, cl, handle, prog)
	prog.end()
	return e.report(view.Ending{Handle: handle, Status: st, Err: err}, &printed)
}

// submitApproved submits req until it is accepted, asking for approval as
// docs/architecture.md §3.2 says: --approve grants one use through the operator
// channel; on a terminal the card is shown and the operator asked, while
// a decision made elsewhere is waited for too (prompt.go); otherwise the
// exact approve command is printed and the decision waited for. Once
// the request is approved, req is submitted again, on its lease. With a
// call id, a call that already started its action is followed, not run
// again, and says so. While a decision is awaited off a terminal, the
// progress line (prog) says so.
func (e *env) submitApproved(ctx context.Context, cl *client.Client, ws string, req wire.ActionRequest, callID string, approve bool, prog *progress) (string, error) {
	for {
		s, err := cl.SubmitCall(ws, req, callID)
		if err != nil {
			return "", err
		}
		if s.Repeat != nil && !e.json {
			fmt.Fprintf(e.stderr, "warrant: call id %s already started action %s (%s now); it is not run again\n", callID, s.Handle, s.Repeat.State)
		}
		if s.Approval == nil {
			return s.Handle, nil
		}
		id := s.Approval.ID
		prog.clear()
		switch {
		case approve:
			if !e.json {
				writeCard(e.stderr, s.Approval) // what the grant binds, for the record
			}
			l, err := cl.Approve(id, 1, 10*time.Minute)
			if err != nil {
				return "", err
			}
			if !e.json {
				fmt.Fprintf(e.stderr, "warrant: --approve granted one use: lease %s\n", l.ID)
			}
			approve = false // one grant per run; a second request means the identity moved
			continue
		case isTerminal(os.Stdin):
			if err := e.prompt(ctx, cl, s.Approval); err != nil {
				return "", err
			}
		default:
			fmt.Fprintf(e.stderr, "warrant: approval required: request %s\n  to approve: broker approve %s --state %s\n  to deny:    broker deny %s --state %s\nwaiting…\n",
				id, id, e.state, id, e.state)
			prog.set("waiting for approval of " + id)
			if err := e.awaitApproval(ctx, cl, id, prog); err != nil {
				return "", err
			}
		}
	}
}

// awaitApproval waits for request id to be decided elsewhere, or for an
// interrupt: then the run stops, and the request, left without its
// requester, expires.
func (e *env) awaitApproval(ctx context.Context, cl *client.Client, id string, prog *progress) error {
	for {
		st, err := cl.ApprovalWait(id, decisionBudget)
		switch {
		case err != nil:
			return err
		case st.State != wire.RequestPending:
			prog.clear() // the waiting line is over: the decision is said on a line of its own
			return e.decided(st, "elsewhere")
		case ctx.Err() != nil:
			return wire.Errorf(wire.CodeCancelled, "interrupted while waiting for approval of request %s; nothing ran", id)
		}
	}
}

// waitEnd waits for handle to be terminal or unknown. An interrupt cancels
// the action and keeps waiting for its end: cancel is not abandon.
func waitEnd(ctx context.Context, cl *client.Client, handle string) (*wire.Status, error) {
	cancelled := false
	for {
		st, _, err := cl.Wait(handle, time.Second)
		if err != nil || st != nil {
			return st, err
		}
		if ctx.Err() != nil && !cancelled {
			cancelled = true
			if _, err := cl.Cancel(handle, "interrupted at the broker run prompt"); err != nil {
				return nil, err
			}
		}
	}
}
