package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"warrant/broker/client"
	"warrant/broker/internal/cardtext"
	"warrant/broker/view"
	"warrant/internal/profile"
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

// ExitStatus is an error that only carries the status Main returns.
type ExitStatus int

func (s ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// runOptions are the flags of `broker run`.
type runOptions struct {
	workspace, cwd, profile, session, goal, step string
	callID                                       string
	egress                                       egressFlag
	approve                                      bool
	embedded                                     BrokerOptions // for the embedded broker
}

// connect dials the daemon on the state directory (DialFor); when none
// answers, brokerd opens an embedded broker there (Local.Embed), to which
// the thin client hands the run. stop closes that broker.
func (e *Env) connect(ctx context.Context, o BrokerOptions) (cl *client.Client, stop func(), err error) {
	if cl, err := e.DialFor(o); cl != nil || err != nil {
		return cl, func() {}, err
	}
	if e.local == nil {
		return nil, nil, e.handOff()
	}
	return e.local.Embed(ctx, e, o)
}

// runAbout is what `broker run --help` says beyond the synopsis and the
// flags: what run does, the profiles and the exit statuses.
func runAbout() string {
	var b strings.Builder
	b.WriteString("Submit EXECUTABLE with its arguments (literal: there is no shell) and wait for it to end, showing its\n" +
		"redacted output. Without a daemon on the state directory, run starts an embedded broker for the run.\n" +
		"Without a lease for exactly this command, it asks: --approve grants one use; on a terminal it shows\n" +
		"the approval card and asks; otherwise it prints the `broker approve` command and waits.\n" +
		"It has no network unless --egress asks for some and the approval grants it: then it reaches exactly\n" +
		"the approved HOST:PORT entries, through the broker's proxy.\n\n" +
		"Profiles (--profile), fixed bundles of limits:\n")
	for _, p := range []wire.Profile{wire.ProfileShort, wire.ProfileStandard, wire.ProfileLong} {
		l := profile.Of(p)
		fmt.Fprintf(&b, "  %-9s %s; memory %d GiB and %d processes where the broker has cgroup controllers\n",
			p, cardtext.ProfileLimits(p), l.Memory>>30, l.Pids)
	}
	b.WriteString("\nExit status: the target's; 128+N killed by signal N; 124 timed out; 130 cancelled; 122 output budget\n" +
		"reached; 125 not executed (any refusal or usage error); 126 could not execute; 127 not found; 123 unknown.")
	return b.String()
}

func runRun(e *Env, args []string) error {
	var o runOptions
	e.Flags.StringVar(&o.workspace, "workspace", "", "the workspace root `DIR` (default: the current directory)")
	e.Flags.StringVar(&o.cwd, "cwd", ".", "the working directory `DIR`, relative to the workspace")
	e.Flags.StringVar(&o.profile, "profile", "short", "the `PROFILE`: short, standard or long (see above)")
	e.Flags.StringVar(&o.session, "session", "", "the agent `SESSION`")
	e.Flags.StringVar(&o.goal, "goal", "", "the `GOAL` (default: the default goal)")
	e.Flags.StringVar(&o.step, "step", "", "the goal's `STEP` this action belongs to (its dependencies must be VERIFIED_DONE)")
	e.Flags.StringVar(&o.callID, "call-id", "", "make the submit idempotent: the same `ID` again in the session never starts a second run")
	e.Flags.Var(&o.egress, "egress", "ask for network access to `HOST:PORT` or a preset of <state>/egress (repeated, or a comma-separated list): the approval card lists the exact hosts")
	e.Flags.StringVar(&o.embedded.Launcher, "launcher", "", "the launcher `PATH`, when no daemon answers (default $WARRANT_LAUNCHER or beside this binary)")
	e.BrokerFlags(&o.embedded)
	e.Flags.BoolVar(&o.approve, "approve", false, "grant one use through the operator channel if approval is needed")
	e.Flags.BoolVar(&e.full, "full", false, "show the approval card with every identity number")
	own := args
	dash := slices.Index(args, "--")
	if dash >= 0 {
		own = args[:dash]
	}
	e.JSON = slices.ContainsFunc(own, func(a string) bool { return a == "--json" || a == "-json" || a == "--json=true" })
	if _, err := e.Parse(own, 0); err != nil {
		return e.notRun(err)
	}
	if dash < 0 || dash == len(args)-1 {
		return e.notRun(UsageError{"put the command after --, as in: broker run -- make test"})
	}
	argv := args[dash+1:]
	profile, err := wire.ParseEnum[wire.Profile](o.profile)
	if err != nil {
		return e.notRun(UsageError{fmt.Sprintf("--profile must be short, standard or long, not %q (broker run --help shows their limits)", o.profile)})
	}
	if o.workspace == "" {
		if o.workspace, err = os.Getwd(); err != nil {
			return e.notRun(err)
		}
	}
	if o.workspace, err = filepath.Abs(o.workspace); err != nil {
		return e.notRun(err)
	}
	asked, err := o.egress.asked()
	if err != nil {
		return e.notRun(err)
	}
	req := wire.ActionRequest{Executable: argv[0], Argv: argv[1:], Cwd: o.cwd, Profile: profile,
		Goal: o.goal, Session: o.session, Step: o.step, Egress: asked}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer e.unsubscribe(stop)
	cl, stopBroker, err := e.connect(ctx, o.embedded)
	if err != nil {
		return e.notRun(err)
	}
	defer func() {
		cl.Close()
		stopBroker()
	}()
	prog := newProgress(e.Stderr, e.JSON)
	defer prog.end()
	sub, err := e.submitApproved(ctx, cl, o.workspace, req, o.callID, o.approve, prog)
	if err != nil {
		prog.end()
		return e.report(view.Ending{Err: err}, nil)
	}
	end := view.Ending{Handle: sub.Handle, Use: view.Use{Lease: sub.Lease, UsesLeft: sub.UsesLeft, Contract: sub.Contract}}
	if e.JSON {
		end.Status, end.Err = e.waitEnd(ctx, cl, sub.Handle)
		return e.report(end, nil)
	}
	prog.set("running " + sub.Handle)
	st, printed, err := e.follow(ctx, cl, sub.Handle, prog)
	prog.end()
	end.Status, end.Err = st, err
	return e.report(end, &printed)
}

// notRun ends `broker run` before anything was submitted, under the same
// contract as a refusal: exit status 125 (not executed), and with --json
// the one object, its error set. A usage error without --json prints the
// sentence and the synopsis.
func (e *Env) notRun(err error) error {
	if errors.Is(err, errHelp) {
		return err
	}
	var ue UsageError
	if errors.As(err, &ue) {
		if !e.JSON {
			e.printUsageError(ue)
			return ExitStatus(exitNotExecuted)
		}
		err = wire.Errorf(wire.CodeArgumentsInvalid, "%s", ue.Msg)
	}
	var we *wire.Error
	if !errors.As(err, &we) {
		err = wire.Errorf(wire.CodeIOFailed, "%v", err) // nothing was sent: not a lost answer
	}
	return e.report(view.Ending{Err: err}, nil)
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
func (e *Env) submitApproved(ctx context.Context, cl *client.Client, ws string, req wire.ActionRequest, callID string, approve bool, prog *progress) (client.Submitted, error) {
	for {
		s, err := cl.SubmitCallContext(ctx, ws, req, callID)
		if err != nil {
			return s, err
		}
		if s.Repeat != nil && !e.JSON {
			fmt.Fprintf(e.Stderr, "warrant: call id %s already started action %s (%s now); it is not run again\n", callID, s.Handle, s.Repeat.State)
		}
		if s.Approval == nil {
			return s, nil
		}
		id := s.Approval.ID
		prog.clear()
		switch {
		case approve:
			if !e.JSON {
				e.writeCard(e.Stderr, s.Approval) // what the grant binds, for the record
			}
			l, err := cl.ApproveContext(ctx, id, 1, 10*time.Minute)
			if err != nil {
				return s, unanswered(err, id)
			}
			if !e.JSON {
				fmt.Fprintf(e.Stderr, "warrant: --approve granted one use: lease %s\n", l.ID)
			}
			approve = false // one grant per run; a second request means the identity moved
			continue
		case isTerminal(os.Stdin):
			if err := e.prompt(ctx, cl, s.Approval); err != nil {
				return s, err
			}
		default:
			st := StateFlag(e.State)
			fmt.Fprintf(e.Stderr, "warrant: approval required: request %s\n  to approve: broker approve %s%s\n  to deny:    broker deny %s%s\nwaiting…\n",
				id, id, st, id, st)
			prog.set("waiting for approval of " + id)
			if err := e.awaitApproval(ctx, cl, id, prog); err != nil {
				return s, err
			}
		}
	}
}

// unanswered is the error of an operator's decision on approval request
// id (--approve's grant, or the prompt's answer) that got no fitting
// answer, interrupted or timed out: every submit of this run was
// answered, so nothing of it was checkpointed or ran, and only whether
// the broker made the decision is not known. It is coded, so that the run
// ends as not executed rather than unknown. A nil or coded err is
// returned as is.
func unanswered(err error, id string) error {
	var we *wire.Error
	if err == nil || errors.As(err, &we) {
		return err
	}
	return wire.Errorf(wire.CodeIOFailed, "%v; nothing ran (`broker approvals` and `broker leases` show whether request %s was decided)", err, id)
}

// awaitApproval waits for request id to be decided elsewhere, or for an
// interrupt: then the run stops, and the request stays pending until it
// is decided or its TTL runs out (journal.RequestTTL); the next submit of
// the same command finds it.
func (e *Env) awaitApproval(ctx context.Context, cl *client.Client, id string, prog *progress) error {
	for {
		st, err := cl.ApprovalWaitContext(ctx, id, decisionBudget)
		switch {
		case ctx.Err() != nil:
			just := "" // a decision that came back with the interrupt is said too
			switch {
			case err == nil && st.State == wire.RequestApproved:
				just = fmt.Sprintf(", which had just been approved elsewhere (lease %s, unused)", st.LeaseID)
			case err == nil && st.State == wire.RequestDenied:
				just = fmt.Sprintf(", which had just been denied elsewhere (%s)", st.Reason)
			}
			return wire.Errorf(wire.CodeCancelled, "interrupted while waiting for approval of request %s%s; nothing ran", id, just)
		case err != nil:
			return err
		case st.State != wire.RequestPending:
			prog.clear() // the waiting line is over: the decision is said on a line of its own
			return e.decided(st, "elsewhere")
		}
	}
}

// waitEnd waits for handle to be terminal or unknown. The first interrupt
// (ctx done) cancels the action and keeps waiting for its end: cancel is
// not abandon. A second interrupt, or a broker that does not answer a
// request within its bound (broker/client: the client's reply timeout;
// at once when its process is stopped), ends the wait with the outcome
// unknown here, since the action was accepted.
func (e *Env) waitEnd(ctx context.Context, cl *client.Client, handle string) (*wire.Status, error) {
	polls := ctx
	for {
		st, _, err := cl.WaitContext(polls, handle, time.Second)
		switch {
		case st != nil:
			return st, nil
		case polls == ctx && ctx.Err() != nil:
			again, stop, err := e.cancelInterrupted(cl, handle)
			defer e.unsubscribe(stop)
			if err != nil {
				return nil, err
			}
			polls = again
		case polls.Err() != nil:
			return nil, e.lost(handle, errors.New("interrupted again while waiting for the cancelled action to end"))
		case err != nil:
			return nil, e.lost(handle, err)
		}
	}
}

// cancelInterrupted cancels handle once the run was interrupted. The
// second interrupt (again) is listened for before the cancel is sent;
// unsubscribe ends that; err is the cancel's, as lost says it.
func (e *Env) cancelInterrupted(cl *client.Client, handle string) (again context.Context, unsubscribe context.CancelFunc, err error) {
	again, unsubscribe = signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	if _, err := cl.CancelContext(again, handle, "interrupted at the broker run prompt"); err != nil {
		return again, unsubscribe, e.lost(handle, fmt.Errorf("interrupted, and the cancel failed: %w", err))
	}
	return again, unsubscribe, nil
}

// unsubscribe stops a run's subscription to its interrupts, unless the
// process ends with the command (Main): signal.Stop waits on the
// runtime's signal thread once for each signal, and the process's end
// ends the subscription anyway. Till then an interrupt only cancels a
// context no one uses, and the run's status stands.
func (e *Env) unsubscribe(stop context.CancelFunc) {
	if !e.ends {
		stop()
	}
}

// lost is err of an accepted action this client lost sight of, with its
// code (IO_FAILED when it has none): its outcome is unknown here, and
// where to learn it.
func (e *Env) lost(handle string, err error) error {
	code, msg := wire.CodeIOFailed, err.Error()
	if we := (*wire.Error)(nil); errors.As(err, &we) {
		code, msg = we.Code, strings.Replace(msg, we.Error(), we.Message, 1)
	}
	return wire.Errorf(code, "%s; action %s was accepted and its outcome is unknown here: `broker status %s --state %s` once the broker answers",
		msg, handle, handle, e.State)
}
