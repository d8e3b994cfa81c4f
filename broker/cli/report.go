package cli

import (
	"fmt"
	"strings"

	"warrant/broker/view"
	"warrant/wire"
)

// exitCode maps what was learned to the exit status of `broker run`.
func exitCode(r *view.Ending) int {
	res := r.Result()
	if res == nil {
		if e := r.WireErr(); e != nil && e.Code == wire.CodeExecutableNotFound {
			return exitNotFound
		}
		if r.LostSight() {
			return exitUnknown
		}
		return exitNotExecuted
	}
	switch res.Outcome {
	case wire.Exited:
		return int(*res.ExitCode)
	case wire.Signaled:
		return 128 + int(res.Signal)
	case wire.TimedOutReaped:
		return exitTimedOut
	case wire.CancelledReaped:
		return exitCancelled
	case wire.OutputLimitReaped:
		return exitOutputLimit
	case wire.SpawnFailed:
		if res.Error != nil && res.Error.Code == wire.CodeExecutableNotFound {
			return exitNotFound
		}
		return exitCannotExec
	case wire.KnownNotExecuted:
		if res.Error != nil && res.Error.Code == wire.CodeExecutableNotFound {
			return exitNotFound
		}
		return exitNotExecuted
	}
	return exitUnknown
}

// report prints what `broker run` learned and returns its exit status.
// In human mode, output already shown live is not printed again.
func (e *env) report(r view.Ending, shownLive bool) error {
	if e.json {
		if err := e.printJSON(r.Action()); err != nil {
			return err
		}
		return exitStatus(exitCode(&r))
	}
	if res := r.Result(); res != nil && !shownLive {
		fmt.Fprint(e.stdout, res.Stdout.Text)
		fmt.Fprint(e.stderr, res.Stderr.Text)
	}
	j := r.Action()
	var b strings.Builder
	fmt.Fprintf(&b, "warrant: %s", j.Outcome)
	switch {
	case j.ExitCode != nil:
		fmt.Fprintf(&b, " (exit %d)", *j.ExitCode)
	case j.Signal != nil:
		fmt.Fprintf(&b, " (signal %d)", *j.Signal)
	}
	if j.Handle != nil {
		fmt.Fprintf(&b, " · action %s", *j.Handle)
	}
	if j.ReceiptID != nil {
		fmt.Fprintf(&b, " · receipt %s", *j.ReceiptID)
	}
	if res := r.Result(); res != nil {
		for i, s := range []wire.Stream{res.Stdout, res.Stderr} {
			if s.Truncated {
				fmt.Fprintf(&b, " · %s truncated (%d of %d bytes kept)", [2]string{"stdout", "stderr"}[i], s.RetainedBytes, s.ObservedBytes)
			}
		}
	}
	if j.Error != nil {
		fmt.Fprintf(&b, "\n  %s: %s", j.Error.Code, j.Error.Message)
	}
	for _, c := range j.ProtectedChanges {
		fmt.Fprintf(&b, "\n  protected path changed (detected, not prevented): %s: %s -> %s", c.Path, c.Before, c.After)
	}
	fmt.Fprintln(e.stderr, b.String())
	return exitStatus(exitCode(&r))
}
