package cli

import (
	"errors"
	"fmt"
	"strings"

	"warrant/wire"
)

// runReport is what `broker run` learned: a handle and its final status,
// or an error before (or instead of) one.
type runReport struct {
	handle string
	status *wire.Status
	err    error
}

// runJSON is the one object `broker run --json` prints (docs/architecture.md §3.2).
type runJSON struct {
	Handle    *string    `json:"handle"`
	Outcome   string     `json:"outcome"`
	ExitCode  *int32     `json:"exit_code"`
	Signal    *uint8     `json:"signal"`
	GroupGone bool       `json:"group_gone"`
	Error     *jsonError `json:"error"`
	Stdout    jsonStream `json:"stdout"`
	Stderr    jsonStream `json:"stderr"`
	ReceiptID *string    `json:"receipt_id"`
	// ProtectedChanges are the protected workspace paths (.git/hooks,
	// .git/config, .envrc, editor directories) that changed during the
	// run: detected, not prevented. Empty when none changed or nothing
	// was checked.
	ProtectedChanges []wire.ProtectedChange `json:"protected_changes"`
}

type jsonError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type jsonStream struct {
	Text          string `json:"text"`
	ObservedBytes uint64 `json:"observed_bytes"`
	RetainedBytes uint64 `json:"retained_bytes"`
	DroppedBytes  uint64 `json:"dropped_bytes"`
	Truncated     bool   `json:"truncated"`
}

func streamJSON(s wire.Stream) jsonStream {
	return jsonStream{Text: s.Text, ObservedBytes: s.ObservedBytes, RetainedBytes: s.RetainedBytes,
		DroppedBytes: s.DroppedBytes, Truncated: s.Truncated}
}

func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// toJSON builds the object; every field comes from the broker's status.
func (r *runReport) toJSON() runJSON {
	out := runJSON{Handle: optional(r.handle), Outcome: wire.KnownNotExecuted.String(), ProtectedChanges: []wire.ProtectedChange{}}
	if res := r.result(); res != nil {
		out.Outcome, out.ExitCode, out.GroupGone = res.Outcome.String(), res.ExitCode, res.GroupGone
		out.Signal = optional(res.Signal)
		out.Stdout, out.Stderr = streamJSON(res.Stdout), streamJSON(res.Stderr)
		out.ReceiptID = optional(res.ReceiptID)
		out.ProtectedChanges = res.ProtectedChanges
		if res.Error != nil {
			out.Error = &jsonError{Code: res.Error.Code.String(), Message: res.Error.Message}
		}
	} else if r.status != nil {
		out.Outcome = wire.OutcomeUnknown.String()
	}
	if e := r.wireErr(); e != nil && out.Error == nil {
		out.Error = &jsonError{Code: e.Code.String(), Message: e.Message}
		if r.lostSight() {
			out.Outcome = wire.OutcomeUnknown.String()
		}
	}
	return out
}

func (r *runReport) result() *wire.Result {
	if r.status == nil {
		return nil
	}
	return r.status.Result
}

// lostSight reports whether the broker may have accepted the action
// without this client learning its fate: an action was accepted and then
// lost sight of, or a request failed in transit (no coded answer came
// back), so a submit may have been checkpointed.
func (r *runReport) lostSight() bool {
	var we *wire.Error
	return r.result() == nil && r.err != nil && (r.handle != "" || !errors.As(r.err, &we))
}

// wireErr is r.err as a coded error; an uncoded one is an I/O failure of
// this client.
func (r *runReport) wireErr() *wire.Error {
	if r.err == nil {
		return nil
	}
	var we *wire.Error
	if errors.As(r.err, &we) {
		return we
	}
	return &wire.Error{Code: wire.CodeIOFailed, Message: r.err.Error()}
}

// exitCode maps what was learned to the exit status of `broker run`.
func (r *runReport) exitCode() int {
	res := r.result()
	if res == nil {
		if e := r.wireErr(); e != nil && e.Code == wire.CodeExecutableNotFound {
			return exitNotFound
		}
		if r.lostSight() {
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
func (e *env) report(r runReport, shownLive bool) error {
	if e.json {
		if err := e.printJSON(r.toJSON()); err != nil {
			return err
		}
		return exitStatus(r.exitCode())
	}
	if res := r.result(); res != nil && !shownLive {
		fmt.Fprint(e.stdout, res.Stdout.Text)
		fmt.Fprint(e.stderr, res.Stderr.Text)
	}
	j := r.toJSON()
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
	if res := r.result(); res != nil {
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
	return exitStatus(r.exitCode())
}
