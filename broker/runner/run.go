package runner

import (
	"context"

	"warrant/broker"
	"warrant/broker/lifecycle"
	"warrant/internal/profile"
	"warrant/receipt"
	"warrant/wire"
)

// run launches and supervises one action, then records its receipt and
// result. It never returns before the outcome is recorded.
func (r *Runner) run(l *broker.Launch, cancel <-chan struct{}) {
	ctx := context.Background()
	out, err := r.recorder(l, receipt.Stdout)
	var errs *receipt.Recorder
	if err == nil {
		if errs, err = r.recorder(l, receipt.Stderr); err != nil {
			out.Close()
		}
	}
	if err != nil {
		why := wire.Errorf(wire.CodeEvidenceBlocked, "the output recorder could not be built, so nothing was started: %v", err)
		r.finish(ctx, l, &wire.Result{Outcome: wire.KnownNotExecuted, Error: why},
			&lifecycle.Result{Outcome: wire.KnownNotExecuted, Err: why}, nil, nil)
		return
	}
	var events []lifecycle.Event
	res := lifecycle.Run(r.spec(l, out, errs, cancel, func(e lifecycle.Event) {
		events = append(events, e)
		r.journal(ctx, l.Handle, e)
	}))
	outC, outErr := out.Close()
	errC, errErr := errs.Close()

	result := &wire.Result{Outcome: res.Outcome, Error: res.Err, GroupGone: res.GroupGone,
		ExitCode: exitCode(&res), Signal: uint8(res.Signal)}
	var streams []*receipt.Captured
	if !res.Started.IsZero() { // STARTED: Ready then EOF
		result.Stdout, result.Stderr = outC.Projection(projectChars), errC.Projection(projectChars)
		if outErr != nil || errErr != nil {
			// The facts of the run stand; its output is withheld.
			result.Error = wire.Errorf(wire.CodeEvidenceBlocked, "output redaction failed; no output is shown or kept")
			result.Stdout.Text, result.Stderr.Text = "", ""
		}
		streams = []*receipt.Captured{outC, errC}
	}
	r.finish(ctx, l, result, &res, events, streams)
}

// finish seals the action's receipt and records its result in one
// transaction. If that fails the action stays in flight in the journal and
// becomes unknown at the next start: the honest answer. Unless the
// outcome is unknown, it first removes the action's private directories,
// so that whoever sees the result also sees them gone.
func (r *Runner) finish(ctx context.Context, l *broker.Launch, result *wire.Result, res *lifecycle.Result,
	events []lifecycle.Event, streams []*receipt.Captured) {
	if result.Outcome != wire.OutcomeUnknown {
		r.b.RemoveActionDirs(l.Handle)
	}
	rc, err := r.b.NewReceipt(ctx, l)
	if err == nil {
		r.fillReceipt(rc, res, events)
		_, err = r.b.FinishWithReceipt(ctx, result, rc, streams...) // adds the streams' evidence
	}
	if err == nil {
		return
	}
	// The result is still a fact: record it without a receipt rather than
	// leave the action in flight (its session BUSY, its waiters waiting).
	r.b.Logf("action %s: seal its receipt: %v; recording the result without one", l.Handle, err)
	if err := r.b.Finish(ctx, l.Handle, result); err != nil {
		r.b.Logf("action %s: record its end: %v; it becomes unknown at the next start", l.Handle, err)
	}
}

// exitCode is the root's exit code for outcome exited only: a group the
// broker ended is never reported with an exit code that could be read as
// the command's own success.
func exitCode(res *lifecycle.Result) *int32 {
	if res.Outcome != wire.Exited || res.ExitCode == nil {
		return nil
	}
	code := int32(*res.ExitCode)
	return &code
}

// journal records a lifecycle event as it happens. TERMINATED and
// UNKNOWN_TERMINATION are recorded with the result.
func (r *Runner) journal(ctx context.Context, handle string, e lifecycle.Event) {
	var err error
	switch e.Kind {
	case receipt.EventStarted:
		err = r.b.MarkRunning(ctx, handle)
	case receipt.EventTermSent, receipt.EventKillSent:
		err = r.b.RecordEvent(ctx, handle, e.Kind.String(), e.Detail)
	}
	if err != nil {
		r.b.Logf("action %s: journal %s: %v", handle, e.Kind, err)
	}
}

func (r *Runner) recorder(l *broker.Launch, s receipt.StreamName) (*receipt.Recorder, error) {
	lim := profile.Of(l.Resolved.Identity.Profile)
	cfg := receipt.RecorderConfig{Stream: s, Retain: lim.Retain, Budget: lim.HardOutput,
		MACKey: r.b.Keys().MACKey(), Rules: r.rules}
	if r.live != nil {
		handle := l.Handle
		cfg.Live = func(p []byte) { r.live(handle, s, p) }
	}
	return receipt.NewRecorder(cfg)
}

// fillReceipt adds what the lifecycle observed to a receipt the broker
// pre-filled with the action's ids, identity and admission events.
func (r *Runner) fillReceipt(rc *receipt.Receipt, res *lifecycle.Result, events []lifecycle.Event) {
	if res.Ready != nil {
		rc.Sandbox = receipt.SandboxOf(res.Ready)
	} else {
		rc.Limits.EnforcedBy = receipt.EnforcedByNone // the launcher applied nothing
	}
	rc.Outcome = res.Outcome
	if res.Err != nil {
		rc.Error = &receipt.Refusal{Code: res.Err.Code, Message: res.Err.Message}
	}
	if res.Errno != 0 {
		errno := res.Errno
		rc.ExecErrno = &errno
	}
	for _, e := range events {
		at := r.b.Stamp(e.Wall)
		rc.Events = append(rc.Events, receipt.Event{Type: e.Kind, At: at})
		if e.Kind == receipt.EventStarted {
			pid := int64(res.Pid)
			rc.Start, rc.Pid = &at, &pid
		}
	}
	if rc.Start != nil && res.RootExited {
		end := r.b.Stamp(res.RootExitAt) // the root's exit; the group's end is GroupGone.At
		rc.End = &end
	}
	rc.ExitCode = exitCode(res)
	if res.Signal != 0 {
		sig := uint8(res.Signal)
		rc.Signal = &sig
	}
	if res.GroupGone {
		m := receipt.GonePgidESRCH
		switch {
		case res.ByCgroup:
			m = receipt.GoneCgroupEmpty
		case res.LeaversUntracked:
			m = receipt.GoneProcessGroupOnly
		}
		rc.GroupGone = &receipt.GroupGone{Method: m, At: r.b.Stamp(res.GoneAt)}
	}
}
