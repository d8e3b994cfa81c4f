package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"

	"warrant/internal/closed"
	"warrant/wire"
)

// Format names the predicate's shape, the version the broker writes:
// v2, in which a stream's raw MAC (rawHmacSha256, of the stream and of
// each chunk record) is HMAC-SHA256 under the output key of the raw
// bytes' SHA-256 (docs/receipts.md). FormatV1's is the HMAC of the raw
// bytes themselves; nothing else differs, and both verify.
const (
	Format   = "command-receipt.v2"
	FormatV1 = "command-receipt.v1"
)

// EventType is one transition of an action (docs/architecture.md §2.9).
type EventType uint8

// The event types, in the only order they may occur.
const (
	EventRequested EventType = iota + 1
	EventApproved
	EventExecuting
	EventStarted
	EventTermSent
	EventKillSent
	EventTerminated
	EventUnknownTermination
)

var eventNames = []string{"", "REQUESTED", "APPROVED", "EXECUTING", "STARTED", "TERM_SENT",
	"KILL_SENT", "TERMINATED", "UNKNOWN_TERMINATION"}

func (e EventType) String() string                { return closed.String(eventNames, e) }
func (e EventType) MarshalText() ([]byte, error)  { return closed.Marshal(eventNames, e) }
func (e *EventType) UnmarshalText(b []byte) error { return closed.Unmarshal(eventNames, b, e) }

// Event is one journalled transition with its time.
type Event struct {
	Type EventType `json:"type"`
	At   Time      `json:"at"`
}

// GoneMethod is how the broker confirmed that the whole group was gone.
type GoneMethod uint8

// The methods.
const (
	GoneCgroupEmpty GoneMethod = iota + 1 // cgroup.events says populated 0
	GonePgidESRCH                         // kill(-pgid, 0) == ESRCH, setsid denied
	// GoneProcessGroupOnly: no member of the process group is left, but
	// descendants that left the group are not tracked (macOS: setsid is
	// not denied there and there are no cgroups).
	GoneProcessGroupOnly
)

var goneNames = []string{"", "cgroup_populated_0", "pgid_esrch", "process_group_only"}

func (g GoneMethod) String() string                { return closed.String(goneNames, g) }
func (g GoneMethod) MarshalText() ([]byte, error)  { return closed.Marshal(goneNames, g) }
func (g *GoneMethod) UnmarshalText(b []byte) error { return closed.Unmarshal(goneNames, b, g) }

// GroupGone is the evidence that no process of the action remained.
type GroupGone struct {
	Method GoneMethod `json:"method"`
	At     Time       `json:"at"`
}

// Refusal is the stable code and sentence of a refusal or failure.
type Refusal struct {
	Code    wire.Code `json:"code"`
	Message string    `json:"message"`
}

// Receipt is the command-receipt predicate (Format). A field the broker did not
// observe is absent, never zero: pointers and omitempty mark everything
// that an outcome may lack, and Validate refuses a receipt that claims
// more than its outcome allows.
type Receipt struct {
	Format       string           `json:"format"`
	ID           string           `json:"receiptId"`
	Action       string           `json:"action"`
	Session      string           `json:"session,omitempty"`
	Goal         string           `json:"goal,omitempty"`
	GoalRevision *uint64          `json:"goalRevision,omitempty"`
	Step         string           `json:"step,omitempty"`
	LeaseID      string           `json:"leaseId,omitempty"`
	ApprovalID   string           `json:"approvalId,omitempty"`
	Contract     *ContractUse     `json:"contract,omitempty"` // the contract grant that admitted the argv, when one did
	Identity     Identity         `json:"identity"`
	Fingerprint  string           `json:"fingerprint"`
	Limits       Limits           `json:"limits"`
	Sandbox      *Sandbox         `json:"sandbox,omitempty"`
	Issued       Time             `json:"issued"`
	Start        *Time            `json:"start,omitempty"` // STARTED: Ready, then EOF on the launcher socket
	End          *Time            `json:"end,omitempty"`   // the root process exited (the group's end is GroupGone.At)
	Pid          *int64           `json:"pid,omitempty"`
	ExitCode     *int32           `json:"exitCode,omitempty"`
	Signal       *uint8           `json:"signal,omitempty"`
	ExecErrno    *uint32          `json:"execErrno,omitempty"`
	GroupGone    *GroupGone       `json:"groupGone,omitempty"`
	Outcome      wire.Outcome     `json:"outcome"`
	Error        *Refusal         `json:"error,omitempty"`
	LimitReached string           `json:"limitReached,omitempty"` // "memory": the kernel killed a process of it at its memory limit
	Usage        *Usage           `json:"usage,omitempty"`        // what its cgroups counted
	Streams      []StreamEvidence `json:"streams,omitempty"`
	Protected    *Protected       `json:"protected,omitempty"`
	Metadata     *Metadata        `json:"metadata,omitempty"`
	Denials      *Denials         `json:"denials,omitempty"`   // what the sandbox was seen to refuse
	Egress       *Egress          `json:"egress,omitempty"`    // an egress grant and what the action connected to through it
	Artefacts    []ReadBack       `json:"artefacts,omitempty"` // the step's declared outputs, read back once the group was gone
	Events       []Event          `json:"events"`
	LogIndex     int64            `json:"logIndex"`                        // position in the receipt log, set by Chain
	Previous     string           `json:"previousReceiptDigest,omitempty"` // of the previous entry's statement; absent only for the first
}

// ContractUse says that a contract grant, not an exact approval, admitted
// the argv (docs/contracts.md): the grant (the receipt's lease), the
// contract's name and digest, and the parse, one entry per argument of
// identity.argv in order. The fingerprint is the concrete command's, as
// for any action.
type ContractUse struct {
	Grant  string        `json:"grant"`
	Name   string        `json:"name"`
	Digest string        `json:"digest"`
	Args   []ContractArg `json:"args"`
}

// ContractArg is one argument and the grammar slot that took it
// (contract.Arg).
type ContractArg struct {
	Index int    `json:"index"`
	Arg   string `json:"arg"`
	Slot  string `json:"slot"`
	Kind  string `json:"kind"`
	Value string `json:"value,omitempty"`
	Path  string `json:"path,omitempty"`
}

// validate checks that c (nil: no contract) names the receipt's lease
// and parses exactly its argv.
func (c *ContractUse) validate(r *Receipt) error {
	if c == nil {
		return nil
	}
	if c.Grant == "" || c.Grant != r.LeaseID || c.Name == "" {
		return errorf("contract: grant (the receipt's leaseId) and name are required")
	}
	if err := checkHex("contract.digest", c.Digest); err != nil {
		return err
	}
	if len(c.Args) != len(r.Identity.Argv) {
		return errorf("contract: %d parsed arguments for an argv of %d", len(c.Args), len(r.Identity.Argv))
	}
	for i, a := range c.Args {
		if a.Index != i || a.Arg != r.Identity.Argv[i] || a.Slot == "" || a.Kind == "" {
			return errorf("contract: argument %d does not parse identity.argv[%d]", i, i)
		}
	}
	return nil
}

// Protected is what became of the workspace's protected paths (what git
// reads, agent and editor configuration, .envrc): their state was
// recorded before the launch and again once the whole group was gone,
// and every difference is listed. With By "mount" the Binds of them that
// existed were also read-only for the action; a change listed is one
// they did not cover (a name created anew, or detect alone).
type Protected struct {
	By      string                 `json:"protectedBy"`     // ProtectedByMount or ProtectedByDetect
	Checked int                    `json:"checked"`         // entries recorded before the launch
	Binds   int                    `json:"binds,omitempty"` // "mount": entries bound read-only or pinned
	Changes []wire.ProtectedChange `json:"protectedChanges,omitempty"`
}

// Metadata counts the target's metadata calls (chmod, chown, xattrs,
// times), which the broker answers itself: performed beneath the writable
// scope, or refused; and what answering them, and the refusals it counts
// (Denials), cost the broker: the CPU time of the thread that answered,
// and how long answers were held back by the action's budget of calls
// (broker/internal/metadata). Receipts made before the cost was recorded
// have neither.
type Metadata struct {
	Performed   uint64 `json:"performed"`
	Refused     uint64 `json:"refused"`
	BrokerCPUNs uint64 `json:"brokerCpuNs,omitempty"`
	HeldNs      uint64 `json:"heldNs,omitempty"`
}

// How Protected's entries were guarded: recorded before and after
// (detect), and also bound read-only in the action's private mount
// namespace (mount), where Binds of them existed to bind.
const (
	ProtectedByDetect = wire.ProtectedByDetect
	ProtectedByMount  = wire.ProtectedByMount
)

func executed(o wire.Outcome) bool { return o >= wire.Exited && o <= wire.OutputLimitReaped }

// Validate checks that r is well formed and claims no more than its
// outcome allows.
func (r *Receipt) Validate() error {
	if err := r.validateShape(); err != nil {
		return err
	}
	ev := map[EventType]bool{}
	for _, e := range r.Events {
		ev[e.Type] = true
	}
	o := r.Outcome
	switch {
	case r.ExitCode != nil && o != wire.Exited:
		return errorf("exit code present for outcome %s", o)
	case o == wire.Exited && (r.ExitCode == nil || r.Signal != nil):
		return errorf("outcome exited needs an exit code and no signal")
	case o == wire.Signaled && r.Signal == nil:
		return errorf("outcome signaled needs the signal")
	case r.Signal != nil && !executed(o) && o != wire.OutcomeUnknown:
		return errorf("signal present for outcome %s", o)
	case executed(o) && (r.Pid == nil || r.Start == nil || r.End == nil || r.Sandbox == nil || r.GroupGone == nil):
		return errorf("outcome %s needs pid, start, end, sandbox facts and group-gone evidence", o)
	case executed(o) && (!ev[EventStarted] || !ev[EventTerminated]):
		return errorf("outcome %s needs STARTED and TERMINATED events", o)
	case (o == wire.TimedOutReaped || o == wire.CancelledReaped || o == wire.OutputLimitReaped) &&
		!ev[EventTermSent] && !ev[EventKillSent]:
		return errorf("outcome %s needs a TERM_SENT or KILL_SENT event", o)
	case o == wire.OutputLimitReaped && !r.overLimit():
		return errorf("outcome output_limit_reaped without a stream past its budget")
	case (o == wire.KnownNotExecuted || o == wire.SpawnFailed) &&
		(r.Pid != nil || r.Start != nil || r.GroupGone != nil || ev[EventStarted] || ev[EventTermSent] ||
			ev[EventKillSent] || ev[EventTerminated] || r.observedOutput()):
		return errorf("outcome %s claims a process or its output", o)
	case o == wire.KnownNotExecuted && (r.Error == nil || r.Sandbox != nil):
		return errorf("outcome known_not_executed needs the refusal and no sandbox facts")
	case (o == wire.SpawnFailed) != (r.ExecErrno != nil):
		return errorf("exec errno present exactly for outcome spawn_failed")
	case (o == wire.OutcomeUnknown) != ev[EventUnknownTermination]:
		return errorf("UNKNOWN_TERMINATION present exactly for outcome unknown")
	case r.End != nil && r.Start != nil && r.End.MonoNs < r.Start.MonoNs:
		return errorf("end before start")
	case r.Metadata != nil && r.Start == nil:
		return errorf("metadata calls are counted only for a started action")
	case r.Denials != nil && r.Start == nil:
		return errorf("refusals are recorded only for a started action")
	case r.Egress != nil && r.Start == nil && (r.Egress.Total > 0 || len(r.Egress.Totals) > 0 || len(r.Egress.Connections) > 0):
		return errorf("connections are recorded only for a started action")
	case r.Protected != nil && (r.GroupGone == nil || r.Start == nil):
		return errorf("protected-path changes are claimed only after a started group was confirmed gone")
	case r.Protected != nil && (r.Protected.By != ProtectedByDetect && r.Protected.By != ProtectedByMount ||
		r.Protected.By == ProtectedByDetect && r.Protected.Binds != 0 || len(r.Protected.Changes) > wire.MaxProtectedChanges):
		return errorf("protected: by %q with %d changes", r.Protected.By, len(r.Protected.Changes))
	case r.Artefacts != nil && (r.GroupGone == nil || r.Start == nil || r.Step == ""):
		return errorf("artefacts are read back only for a step's started action once its group was confirmed gone")
	}
	return validateReadBacks("artefacts", r.Artefacts, MaxArtefacts) // and at most MaxArtefacts of them
}

func (r *Receipt) validateShape() error {
	if r.Format != Format && r.Format != FormatV1 {
		return errorf("format %q, want %q or %q", r.Format, Format, FormatV1)
	}
	if r.ID == "" || len(r.ID) > 256 || r.Action == "" || len(r.Action) > 256 {
		return errorf("receipt id and action are required (at most 256 bytes)")
	}
	if _, err := r.Outcome.MarshalText(); err != nil {
		return errorf("invalid outcome %d", r.Outcome)
	}
	err := firstErr(checkHex("fingerprint", r.Fingerprint),
		checkHex("identity.executable.sha256", r.Identity.Executable.SHA256),
		checkHex("identity.policyDigest", r.Identity.PolicyDigest), r.Contract.validate(r))
	if err == nil && r.Previous != "" {
		err = checkHex("previousReceiptDigest", r.Previous)
	}
	if in := r.Identity.Interpreter; err == nil && in != nil {
		err = checkHex("identity.interpreter.sha256", in.File.SHA256)
	}
	if err == nil && r.Sandbox != nil && r.Sandbox.InterpreterSHA256 != "" {
		err = checkHex("sandbox.interpreterSha256", r.Sandbox.InterpreterSHA256)
	}
	if err == nil && r.Sandbox != nil {
		inPlace := r.Sandbox.Binding == wire.InPlace || r.Sandbox.Binding == wire.Broken
		if !inPlace || r.Sandbox.ExecutedSHA256 != "" {
			err = checkHex("sandbox.executedSha256", r.Sandbox.ExecutedSHA256)
		}
		switch s := r.Sandbox; {
		case err != nil:
		case inPlace != (s.BoundBy != ""):
			err = errorf("sandbox: boundBy goes with an in-place (or broken) binding and only with it")
		case (s.SeccompDigest == "") == (s.SeatbeltDigest == ""):
			err = errorf("sandbox: exactly one of seccompDigest and seatbeltDigest")
		case s.SeccompDigest != "":
			err = checkHex("sandbox.seccompDigest", s.SeccompDigest)
		default:
			err = checkHex("sandbox.seatbeltDigest", s.SeatbeltDigest)
		}
	}
	if err != nil {
		return err
	}
	var last EventType
	var lastMono int64
	for i, e := range r.Events {
		if e.Type <= last || int(e.Type) >= len(eventNames) ||
			(e.Type == EventUnknownTermination && last == EventTerminated) || (i > 0 && e.At.MonoNs < lastMono) {
			return errorf("events[%d]: %s out of order", i, e.Type)
		}
		last, lastMono = e.Type, e.At.MonoNs
	}
	seen := map[StreamName]bool{}
	for i := range r.Streams {
		s := &r.Streams[i]
		if err := s.validate(); err != nil {
			return err
		}
		if seen[s.Stream] {
			return errorf("stream %s twice", s.Stream)
		}
		seen[s.Stream] = true
	}
	if r.Error != nil && (r.Error.Code == 0 || r.Error.Message == "") {
		return errorf("error needs a code and a sentence")
	}
	if err := r.Limits.validate(); err != nil {
		return err
	}
	if r.Denials != nil {
		if err := r.Denials.Wire().Validate(); err != nil {
			return errorf("%v", err)
		}
	}
	if r.Egress != nil {
		if err := r.Egress.validate(); err != nil {
			return err
		}
	}
	return r.validateUsage()
}

func (r *Receipt) overLimit() bool {
	for _, s := range r.Streams {
		if s.ObservedBytes > s.Budget {
			return true
		}
	}
	return false
}

func (r *Receipt) observedOutput() bool {
	for _, s := range r.Streams {
		if s.ObservedBytes > 0 {
			return true
		}
	}
	return false
}

// Encode returns the canonical encoding of r: encoding/json of the Go
// value, whose field order is fixed by the struct and which holds no maps
// and no floats, so equal receipts give equal bytes. Text JSON cannot
// carry exactly is refused (validText).
func (r *Receipt) Encode() ([]byte, error) {
	if !validText(reflect.ValueOf(r)) {
		return nil, fmt.Errorf("encode receipt: %w: text is not valid UTF-8", ErrInvalid)
	}
	return r.encode()
}

func (r *Receipt) encode() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("encode receipt: %w", err)
	}
	return json.Marshal(r)
}

// DecodeReceipt strictly decodes a canonical receipt: unknown fields,
// trailing data and any encoding other than Encode's are refused.
func DecodeReceipt(b []byte) (*Receipt, error) {
	var r Receipt
	if err := strictJSON(b, &r); err != nil {
		return nil, fmt.Errorf("decode receipt: %w", err)
	}
	again, err := r.encode()
	if err != nil {
		return nil, fmt.Errorf("decode receipt: %w", err)
	}
	if !bytes.Equal(again, b) {
		return nil, fmt.Errorf("decode receipt: %w: not in canonical form", ErrInvalid)
	}
	return &r, nil
}

// validText reports whether encoding/json carries every string of v
// exactly. encoding/json writes invalid UTF-8 as an escaped U+FFFD, so a
// receipt holding such text would be signed as one text and decode as
// another. The walk knows the kinds a receipt is built of: strings,
// booleans, integers, pointers, slices, and structs whose fields are all
// exported and none embedded. It reports false for anything else, so a
// field of another kind refuses every receipt until the walk is taught
// it. The types that marshal themselves write a closed name, or
// (Enforcement) the strings of their own fields, which the walk checks
// (TestReceiptTypesMarshalAsWalked).
func validText(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return utf8.ValidString(v.String())
	case reflect.Pointer:
		return v.IsNil() || validText(v.Elem())
	case reflect.Slice:
		for i := range v.Len() {
			if !validText(v.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.Anonymous || !f.IsExported() || !validText(v.Field(i)) {
				return false
			}
		}
		return true
	}
	return v.Kind() == reflect.Bool || v.CanInt() || v.CanUint()
}

// strictJSON decodes exactly one JSON value with no unknown fields.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrInvalid)
	}
	return nil
}
