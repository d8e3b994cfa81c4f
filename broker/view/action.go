package view

import (
	"errors"
	"fmt"
	"strings"

	"warrant/wire"
)

// Ending is what a client learned of one action: a handle and its final
// status, or an error before (or instead of) one.
type Ending struct {
	Handle string
	Status *wire.Status
	Err    error
}

// Action is the one object `broker run --json` prints (docs/architecture.md
// §3.2), and the body of the MCP server's action results.
type Action struct {
	Handle    *string `json:"handle"`
	Outcome   string  `json:"outcome"`
	ExitCode  *int32  `json:"exit_code"`
	Signal    *uint8  `json:"signal"`
	GroupGone bool    `json:"group_gone"`
	Error     *Error  `json:"error"`
	Stdout    Stream  `json:"stdout"`
	Stderr    Stream  `json:"stderr"`
	ReceiptID *string `json:"receipt_id"`
	// ProtectedChanges are the protected workspace paths (.git/hooks,
	// .git/config, .envrc, editor directories) that changed during the
	// run: detected, not prevented. Empty when none changed or nothing
	// was checked.
	ProtectedChanges []wire.ProtectedChange `json:"protected_changes"`
}

// Error is a refusal or failure: the stable code and the sentence.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Stream is one output stream's redacted, bounded projection with its
// exact counts.
type Stream struct {
	Text          string `json:"text"`
	ObservedBytes uint64 `json:"observed_bytes"`
	RetainedBytes uint64 `json:"retained_bytes"`
	DroppedBytes  uint64 `json:"dropped_bytes"`
	Truncated     bool   `json:"truncated"`
}

func streamOf(s wire.Stream) Stream {
	return Stream{Text: s.Text, ObservedBytes: s.ObservedBytes, RetainedBytes: s.RetainedBytes,
		DroppedBytes: s.DroppedBytes, Truncated: s.Truncated}
}

func optional[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// Action builds the object; every field comes from the broker's status.
func (r *Ending) Action() Action {
	out := Action{Handle: optional(r.Handle), Outcome: wire.KnownNotExecuted.String(), ProtectedChanges: []wire.ProtectedChange{}}
	if res := r.Result(); res != nil {
		out.Outcome, out.ExitCode, out.GroupGone = res.Outcome.String(), res.ExitCode, res.GroupGone
		out.Signal = optional(res.Signal)
		out.Stdout, out.Stderr = streamOf(res.Stdout), streamOf(res.Stderr)
		out.ReceiptID = optional(res.ReceiptID)
		if res.ProtectedChanges != nil {
			out.ProtectedChanges = res.ProtectedChanges
		}
		if res.Error != nil {
			out.Error = &Error{Code: res.Error.Code.String(), Message: res.Error.Message}
		}
	} else if r.Status != nil {
		out.Outcome = wire.OutcomeUnknown.String()
	}
	if e := r.WireErr(); e != nil && out.Error == nil {
		out.Error = &Error{Code: e.Code.String(), Message: e.Message}
		if r.LostSight() {
			out.Outcome = wire.OutcomeUnknown.String()
		}
	}
	return out
}

// Result is the final status's result, or nil.
func (r *Ending) Result() *wire.Result {
	if r.Status == nil {
		return nil
	}
	return r.Status.Result
}

// LostSight reports whether the broker may have accepted the action
// without this client learning its fate: an action was accepted and then
// lost sight of, or a request failed in transit (no coded answer came
// back), so a submit may have been checkpointed.
func (r *Ending) LostSight() bool {
	var we *wire.Error
	return r.Result() == nil && r.Err != nil && (r.Handle != "" || !errors.As(r.Err, &we))
}

// WireErr is r.Err as a coded error; an uncoded one is an I/O failure of
// this client.
func (r *Ending) WireErr() *wire.Error {
	if r.Err == nil {
		return nil
	}
	var we *wire.Error
	if errors.As(r.Err, &we) {
		return we
	}
	return &wire.Error{Code: wire.CodeIOFailed, Message: r.Err.Error()}
}

// Summary is the object in words: the outcome, the action and its
// receipt, what was truncated, then the error and the protected paths
// that changed, a line each.
func (a *Action) Summary() string {
	var b strings.Builder
	b.WriteString(a.Outcome)
	switch {
	case a.ExitCode != nil:
		fmt.Fprintf(&b, " (exit %d)", *a.ExitCode)
	case a.Signal != nil:
		fmt.Fprintf(&b, " (signal %d)", *a.Signal)
	}
	if a.Handle != nil {
		fmt.Fprintf(&b, " · action %s", *a.Handle)
	}
	if a.ReceiptID != nil {
		fmt.Fprintf(&b, " · receipt %s", *a.ReceiptID)
	}
	for i, s := range []Stream{a.Stdout, a.Stderr} {
		if s.Truncated {
			fmt.Fprintf(&b, " · %s truncated (%d of %d bytes kept)", [2]string{"stdout", "stderr"}[i], s.RetainedBytes, s.ObservedBytes)
		}
	}
	if a.Error != nil {
		fmt.Fprintf(&b, "\n  %s: %s", a.Error.Code, a.Error.Message)
	}
	for _, c := range a.ProtectedChanges {
		fmt.Fprintf(&b, "\n  protected path changed (detected, not prevented): %s: %s -> %s", c.Path, c.Before, c.After)
	}
	return b.String()
}
