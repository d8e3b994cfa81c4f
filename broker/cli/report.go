package cli

import (
	"errors"
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
// by its outcome's name. Its sentence is the same in text and JSON
// (saidPlainly); --debug adds the system's own account of it on stderr,
// in either mode, never into the object (docs/json.md).
func (e *Env) report(r view.Ending, printed *[2]view.Printed) error {
	a := r.Action()
	saidPlainly(&a, &r)
	if e.JSON {
		if err := e.PrintJSON("warrant.run/v1", a); err != nil {
			return err
		}
		e.printEndingAccount(&r)
		return ExitStatus(exitCode(&r))
	}
	if res := r.Result(); res != nil && printed == nil {
		fmt.Fprint(e.Stdout, res.Stdout.Text)
		fmt.Fprint(e.Stderr, res.Stderr.Text)
	}
	fmt.Fprintln(e.Stderr, "warrant: "+headline(&a, printed))
	e.printEndingAccount(&r)
	return ExitStatus(exitCode(&r))
}

// saidPlainly puts a's error in words a person and a program read alike:
// an INTERNAL refusal's by a plain sentence (plainly), a failure of this
// client's own, uncoded, by what failed rather than the system calls of
// its chain (systemWords).
func saidPlainly(a *view.Action, r *view.Ending) {
	if a.Error == nil {
		return
	}
	said := *a.Error
	said.Message = plainly(said.Code, said.Message)
	if uncoded(r) {
		said.Message = systemWords(r.Err)
	}
	a.Error = &said
}

// uncoded reports whether r ended in a failure of this client's own, an
// error chain with no wire code.
func uncoded(r *view.Ending) bool {
	var we *wire.Error
	return r.Result() == nil && r.Err != nil && !errors.As(r.Err, &we)
}

// printEndingAccount prints, under --debug only, the system's own
// account of the refusal r ended in (saidPlainly says it): the result's
// detail, or the reply's or the chain of this client's error
// (printAccount).
func (e *Env) printEndingAccount(r *view.Ending) {
	if res := r.Result(); res != nil && res.Error != nil {
		e.printDetail(res.Error)
	} else if r.Err != nil {
		e.printAccount(r.Err)
	}
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
