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
	Use
}

// Use is the lease whose use an accepted action consumed, what it had
// left right after, and the contract when the lease is a contract grant
// (wire.Accepted).
type Use struct {
	Lease    string
	UsesLeft uint32
	Contract string
}

// Action is the one object `broker run --json` prints (docs/architecture.md
// §3.2, docs/json.md), and the body of the MCP server's action results.
//
// What was not observed is null: the exit code and signal of an action
// that did not exit or was not signalled; group_gone and the streams of
// one whose end the client never learned (nothing ran, or sight of it was
// lost).
type Action struct {
	Handle    *string `json:"handle"`
	Outcome   string  `json:"outcome"`
	ExitCode  *int32  `json:"exit_code"`
	Signal    *uint8  `json:"signal"`
	GroupGone *bool   `json:"group_gone"`
	Error     *Error  `json:"error"`
	Stdout    *Stream `json:"stdout"`
	Stderr    *Stream `json:"stderr"`
	ReceiptID *string `json:"receipt_id"`
	// Lease and UsesLeft are the lease the action used and the uses it
	// had left right after; null when no lease was used.
	Lease    *string `json:"lease"`
	UsesLeft *uint32 `json:"uses_left"`
	// Contract is the contract whose grant (Lease) admitted the argv;
	// null when an exact approval's lease did, or no lease was used.
	Contract *string `json:"contract"`
	// ProtectedChanges are the protected workspace paths (.git/hooks,
	// .git/config, .envrc, editor directories) that changed during the
	// run: detected, not prevented. Empty when none changed or nothing
	// was checked.
	ProtectedChanges []ProtectedChange `json:"protected_changes"`
	// Denials are the kinds of call the sandbox refused that may explain
	// a failure, each with the smallest remedy (denial.go);
	// RoutineDenials the ones programs make to probe and recover from;
	// DenialsSeen what watched the action and how many refused calls it
	// saw in all (null when nothing watched: it did not start).
	Denials        []Denial     `json:"denials"`
	RoutineDenials []Denial     `json:"routine_denials"`
	DenialsSeen    *DenialsSeen `json:"denials_seen"`
	// Egress is what an action with an egress grant connected to through
	// the broker's proxy (egress.go); null without a grant, or when the
	// action did not start.
	Egress *Egress `json:"egress"`
}

// ProtectedChange is one protected path whose state changed (see
// wire.ProtectedChange for the state's forms).
type ProtectedChange struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Error is a refusal or failure: the stable code and the sentence.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Stream is one output stream's redacted, bounded projection with its
// exact counts (wire.Stream says what each one counts): Text shows the
// first TextHeadBytes and the last TextTailBytes of the RedactedBytes of
// the redacted stream, with one omission marker between them; the
// receipt retains its first RetainedHeadBytes and its last
// RetainedBytes-RetainedHeadBytes.
type Stream struct {
	Text              string `json:"text"`
	ObservedBytes     uint64 `json:"observed_bytes"`
	RedactedBytes     uint64 `json:"redacted_bytes"`
	TextHeadBytes     uint64 `json:"text_head_bytes"`
	TextTailBytes     uint64 `json:"text_tail_bytes"`
	RetainedHeadBytes uint64 `json:"retained_head_bytes"`
	RetainedBytes     uint64 `json:"retained_bytes"`
	DroppedBytes      uint64 `json:"dropped_bytes"`
	Truncated         bool   `json:"truncated"`
}

func streamOf(s wire.Stream) *Stream {
	return &Stream{Text: s.Text, ObservedBytes: s.ObservedBytes, RedactedBytes: s.RedactedBytes,
		TextHeadBytes: s.TextHeadBytes, TextTailBytes: s.TextTailBytes, RetainedHeadBytes: s.RetainedHeadBytes,
		RetainedBytes: s.RetainedBytes, DroppedBytes: s.DroppedBytes, Truncated: s.Truncated}
}

// Printed is what a client printed of one stream as it was followed live:
// the bytes it printed and those it was told it was not sent.
type Printed struct {
	Bytes, NotStreamed uint64
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
	out := Action{Handle: optional(r.Handle), Outcome: wire.KnownNotExecuted.String(), ProtectedChanges: []ProtectedChange{}}
	out.Denials, out.RoutineDenials, out.DenialsSeen = denialsOf(nil)
	if r.Lease != "" {
		out.Lease, out.UsesLeft = &r.Lease, &r.UsesLeft
		out.Contract = optional(r.Contract)
	}
	if res := r.Result(); res != nil {
		gone := res.GroupGone
		out.Outcome, out.ExitCode, out.GroupGone = res.Outcome.String(), res.ExitCode, &gone
		out.Signal = optional(res.Signal)
		out.Stdout, out.Stderr = streamOf(res.Stdout), streamOf(res.Stderr)
		out.ReceiptID = optional(res.ReceiptID)
		for _, c := range res.ProtectedChanges {
			out.ProtectedChanges = append(out.ProtectedChanges, ProtectedChange(c))
		}
		out.Denials, out.RoutineDenials, out.DenialsSeen = denialsOf(res.Denials)
		out.Egress = egressOf(res.Egress)
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
// receipt, then what the text of each stream shows of it and what the
// receipt retains when that is not the whole stream, then the error, the
// protected paths that changed, what the action connected to through the
// egress proxy and what the sandbox refused, a line each.
func (a *Action) Summary() string { return a.summary(nil) }

// SummaryPrinted is Summary for a client that printed the streams live
// instead of their text: what it printed, beside what the receipt
// retains, when that is not the whole stream.
func (a *Action) SummaryPrinted(live [2]Printed) string { return a.summary(&live) }

func (a *Action) summary(live *[2]Printed) string {
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
	if a.Lease != nil {
		fmt.Fprintf(&b, " · lease %s, %d use(s) left", *a.Lease, *a.UsesLeft)
		if a.Contract != nil {
			fmt.Fprintf(&b, " (contract %s)", *a.Contract)
		}
	}
	for i, s := range []*Stream{a.Stdout, a.Stderr} {
		if s == nil {
			continue
		}
		var p *Printed
		if live != nil {
			p = &live[i]
		}
		if line := a.streamLine([2]string{"stdout", "stderr"}[i], *s, p); line != "" {
			b.WriteString("\n  " + line)
		}
	}
	if a.Error != nil {
		fmt.Fprintf(&b, "\n  %s: %s", a.Error.Code, a.Error.Message)
	}
	for _, c := range a.ProtectedChanges {
		fmt.Fprintf(&b, "\n  protected path changed (detected, not prevented): %s: %s -> %s", c.Path, c.Before, c.After)
	}
	if a.Egress != nil {
		b.WriteString("\n  " + a.Egress.line())
	}
	writeDenials(&b, a.Denials, a.RoutineDenials, a.DenialsSeen, a.ExitCode != nil && *a.ExitCode == 0)
	return b.String()
}

// streamLine says what was shown of one stream (its text, or what was
// printed live) and what the receipt retains, when either is not the
// whole redacted stream; "" when both are.
func (a *Action) streamLine(name string, s Stream, p *Printed) string {
	shown := fmt.Sprintf("text shows head %d + tail %d of %d bytes", s.TextHeadBytes, s.TextTailBytes, s.RedactedBytes)
	whole := s.TextHeadBytes+s.TextTailBytes == s.RedactedBytes
	if p != nil {
		shown = fmt.Sprintf("printed live %d of %d bytes", p.Bytes, s.RedactedBytes)
		if p.NotStreamed > 0 {
			shown += fmt.Sprintf(" (%d not streamed)", p.NotStreamed)
		}
		whole = p.Bytes == s.RedactedBytes
	}
	kept := s.RetainedBytes == s.RedactedBytes && s.DroppedBytes == 0
	switch {
	case s.RedactedBytes == 0 && s.RetainedBytes > 0: // recorded before the counts existed
		return fmt.Sprintf("%s truncated (%d of %d bytes kept)", name, s.RetainedBytes, s.ObservedBytes)
	case whole && kept && !s.Truncated:
		return ""
	}
	line := fmt.Sprintf("%s: %s; retained for the receipt: head %d + tail %d of %d bytes", name, shown,
		s.RetainedHeadBytes, s.RetainedBytes-s.RetainedHeadBytes, s.RedactedBytes)
	if a.Handle != nil {
		line += fmt.Sprintf(" (broker output %s --stream %s)", *a.Handle, name)
	}
	return line
}
