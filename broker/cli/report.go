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
		switch e := r.WireErr(); {
		case e != nil && e.Code == wire.CodeExecutableNotFound:
			return exitNotFound
		case e != nil && e.Code == wire.CodeCancelled:
			return exitCancelled // interrupted before anything ran
		case r.LostSight():
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
// In human mode, output printed live (printed: what of it) is not printed
// again, and the summary says what was printed beside what the receipt
// retains; otherwise the streams' text is printed and the summary says
// what the text shows. A refusal is headed by what is wrong rather than
// by its outcome's name, and --debug adds the system's own account of it.
func (e *env) report(r view.Ending, printed *[2]view.Printed) error {
	if e.json {
		if err := e.printJSON("warrant.run/v1", r.Action()); err != nil {
			return err
		}
		return exitStatus(exitCode(&r))
	}
	a := r.Action()
	if res := r.Result(); res != nil && printed == nil {
		fmt.Fprint(e.stdout, res.Stdout.Text)
		fmt.Fprint(e.stderr, res.Stderr.Text)
	}
	fmt.Fprintln(e.stderr, "warrant: "+headline(&a, printed))
	if res := r.Result(); res != nil && res.Error != nil {
		e.printDetail(res.Error)
	} else if we := r.WireErr(); we != nil {
		e.printDetail(we)
	}
	return exitStatus(exitCode(&r))
}

// headline is the summary line of `broker run` (view.Action.Summary, or
// SummaryPrinted for output printed live): for an action that did not
// run, "nothing ran", the code and the sentence first, then the rest of
// the summary; otherwise the summary as it is.
func headline(a *view.Action, printed *[2]view.Printed) string {
	summary := func(a *view.Action) string {
		if printed != nil {
			return a.SummaryPrinted(*printed)
		}
		return a.Summary()
	}
	if a.Outcome != wire.KnownNotExecuted.String() || a.Error == nil {
		return summary(a)
	}
	rest := *a
	rest.Error = nil
	return "nothing ran: " + a.Error.Code + ": " + a.Error.Message + strings.TrimPrefix(summary(&rest), a.Outcome)
}
