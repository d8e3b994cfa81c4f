package wire

import (
	"fmt"
	"unicode/utf8"
)

// Accepted means the action passed admission and holds a matching lease;
// Handle names it from now on.
type Accepted struct {
	Handle string `cbor:"handle"`
	// Lease is the lease whose use the checkpoint consumed, and UsesLeft
	// what that lease had left right after.
	Lease    string `cbor:"lease,omitempty"`
	UsesLeft uint32 `cbor:"uses_left,omitempty"`
	// Contract is the contract whose grant (Lease) admitted the argv,
	// when no exact lease did.
	Contract string `cbor:"contract,omitempty"`
}

// ApprovalRequired means no lease matches; a human must decide Request.
type ApprovalRequired struct {
	Request ApprovalView `cbor:"request"`
}

// ApprovalView is an approval request as the operator sees it: the whole
// identity, its fingerprint and the plain limitations text, and its state
// with the reason it ended (a denial's, or why it expired).
type ApprovalView struct {
	ID           string          `cbor:"id"`
	Goal         string          `cbor:"goal"`
	GoalRevision uint64          `cbor:"goal_revision"`
	Session      string          `cbor:"session,omitempty"`
	Identity     CommandIdentity `cbor:"identity"`
	Fingerprint  []byte          `cbor:"fingerprint"`
	Limitations  string          `cbor:"limitations"`
	CreatedUnix  int64           `cbor:"created_unix"`
	State        RequestState    `cbor:"state"`
	Reason       string          `cbor:"reason,omitempty"`
}

func (a *ApprovalView) validate() error {
	return firstErr(checkName("id", a.ID), checkEnum(a.State), checkText("reason", a.Reason, maxText), checkText("goal", a.Goal, maxName),
		checkText("session", a.Session, maxName), a.Identity.validate(),
		checkDigest("fingerprint", a.Fingerprint), checkText("limitations", a.Limitations, maxText))
}

// LeaseView is a lease as the operator sees it.
type LeaseView struct {
	ID           string `cbor:"id"`
	ApprovalID   string `cbor:"approval_id"`
	Goal         string `cbor:"goal"`
	GoalRevision uint64 `cbor:"goal_revision"`
	Fingerprint  []byte `cbor:"fingerprint"`
	ExpiresUnix  int64  `cbor:"expires_unix"`
	UsesLeft     uint32 `cbor:"uses_left"`
	Revoked      bool   `cbor:"revoked,omitempty"`
	// Executable and Argv are the command the lease allows (the requested
	// executable, the arguments after argv[0]), cut as ListedArgv says.
	Executable    string   `cbor:"executable,omitempty"`
	Argv          []string `cbor:"argv,omitempty"`
	ArgvTruncated bool     `cbor:"argv_truncated,omitempty"`
	// Profile is the profile the lease's identity binds (absent from
	// brokers that did not say it).
	Profile Profile `cbor:"profile,omitzero"`
	// Egress is the exact egress list the lease grants (canonical,
	// sorted): its request's, or the one the operator approved instead
	// (Approve.SetEgress); absent, none.
	Egress []string `cbor:"egress,omitempty"`
	// Contract, for a contract grant (ListContractGrants), is the
	// contract's name; the grant allows every argv it accepts.
	Contract string `cbor:"contract,omitempty"`
	// WillNotMatch, for a lease otherwise usable, says why it can never
	// match on the broker that listed it: its identity was made under
	// another policy or environment ("granted under policy sha256 …
	// (what differs), will not match"), or that this cannot be checked
	// now, and why. Empty when it may match.
	WillNotMatch string `cbor:"will_not_match,omitempty"`
	// Program and Settled are set in ContractEnable's answer: the
	// executable file the grant binds, and how many pending approval
	// requests it approved as it was enabled (the request it was enabled
	// for, and every other one of the workspace it admits).
	Program *ProgramFile `cbor:"program,omitempty"`
	Settled uint32       `cbor:"settled,omitzero"`
}

func (l *LeaseView) validate() error {
	err := firstErr(checkName("id", l.ID), checkName("approval_id", l.ApprovalID),
		checkText("goal", l.Goal, maxName), checkDigest("fingerprint", l.Fingerprint),
		checkText("executable", l.Executable, maxPath), checkListedArgv(l.Argv), checkText("contract", l.Contract, maxName),
		checkText("will_not_match", l.WillNotMatch, maxText), checkEgress("egress", l.Egress))
	if err == nil && l.Profile != 0 {
		err = checkEnum(l.Profile)
	}
	if err == nil && l.Program != nil {
		err = l.Program.validate("program")
	}
	return err
}

// Stream is the agent-facing projection of one output stream: redacted,
// invalid UTF-8 replaced, control characters escaped, bounded, with the
// truncation facts beside it. Three byte counts describe three different
// things, all in the redacted stream of RedactedBytes bytes (what a live
// follower is sent): Text shows its first TextHeadBytes and its last
// TextTailBytes, with one marker line between them counting the bytes
// left out; the receipt retains its first RetainedHeadBytes and its last
// RetainedBytes-RetainedHeadBytes (`broker output` shows them). The new
// counts are absent (zero) in results recorded before they existed.
type Stream struct {
	Text              string `cbor:"text"`
	ObservedBytes     uint64 `cbor:"observed_bytes"`
	RedactedBytes     uint64 `cbor:"redacted_bytes,omitempty"`
	TextHeadBytes     uint64 `cbor:"text_head_bytes,omitempty"`
	TextTailBytes     uint64 `cbor:"text_tail_bytes,omitempty"`
	RetainedHeadBytes uint64 `cbor:"retained_head_bytes,omitempty"`
	RetainedBytes     uint64 `cbor:"retained_bytes"`
	DroppedBytes      uint64 `cbor:"dropped_bytes"`
	Truncated         bool   `cbor:"truncated,omitempty"`
}

// Result is how a terminal (or unknown) action ended, from observed facts.
type Result struct {
	Outcome   Outcome `cbor:"outcome"`
	ExitCode  *int32  `cbor:"exit_code,omitempty"` // set only for outcome exited
	Signal    uint8   `cbor:"signal,omitempty"`    // set only when a signal ended the root
	GroupGone bool    `cbor:"group_gone"`          // the whole group was confirmed gone
	Error     *Error  `cbor:"error,omitempty"`
	Stdout    Stream  `cbor:"stdout"`
	Stderr    Stream  `cbor:"stderr"`
	ReceiptID string  `cbor:"receipt_id,omitempty"`
	// ProtectedChanges lists the protected workspace paths (.git/hooks,
	// .git/config, .envrc, editor directories) whose state differs after
	// the group was gone from before the launch: detected, not prevented.
	ProtectedChanges []ProtectedChange `cbor:"protected_changes,omitempty"`
	// Denials is what the sandbox was seen to refuse (denial.go); absent
	// when nothing watched the action (it did not start).
	Denials *Denials `cbor:"denials,omitempty"`
	// Egress is what an action with an egress grant connected to through
	// the broker's proxy (egress.go); absent without a grant.
	Egress *Egress `cbor:"egress,omitempty"`
}

// MaxProtectedChanges bounds the list a result carries; the receipt keeps
// the same bound.
const MaxProtectedChanges = 256

// ProtectedChange is one protected path whose state changed: each state is
// "sha256:HEX mode:OOOO", "symlink:HEX", "dir mode:OOOO", "absent" or
// "unchecked" (over the scan's bounds, or unreadable: nothing is claimed).
type ProtectedChange struct {
	Path   string `cbor:"path" json:"path"`
	Before string `cbor:"before" json:"before"`
	After  string `cbor:"after" json:"after"`
}

func (r *Result) validate() error {
	err := firstErr(checkEnum(r.Outcome), checkText("stdout.text", r.Stdout.Text, maxOutputText),
		checkText("stderr.text", r.Stderr.Text, maxOutputText), checkText("receipt_id", r.ReceiptID, maxName))
	if err == nil && r.Error != nil {
		err = r.Error.validate()
	}
	if err == nil && len(r.ProtectedChanges) > MaxProtectedChanges {
		err = fmt.Errorf("result: %d protected changes; the cap is %d", len(r.ProtectedChanges), MaxProtectedChanges)
	}
	for i := 0; err == nil && i < len(r.ProtectedChanges); i++ {
		c := r.ProtectedChanges[i]
		err = firstErr(checkText("protected_changes.path", c.Path, maxText), checkText("protected_changes.before", c.Before, maxName),
			checkText("protected_changes.after", c.After, maxName))
	}
	if err == nil && r.Denials != nil {
		err = r.Denials.Validate()
	}
	if err == nil && r.Egress != nil {
		err = r.Egress.Validate()
	}
	if err == nil && (r.ExitCode != nil) != (r.Outcome == Exited) {
		err = fmt.Errorf("result: an exit code goes with outcome exited and only with it (outcome %s)", r.Outcome)
	}
	return err
}

// Status answers query and wait.
type Status struct {
	Handle string      `cbor:"handle"`
	State  ActionState `cbor:"state"`
	Result *Result     `cbor:"result,omitempty"` // set when State is terminal or unknown
}

// WaitTimeout means the wait budget ran out while the action was still in
// State. It is not a failure.
type WaitTimeout struct {
	Handle string      `cbor:"handle"`
	State  ActionState `cbor:"state"`
}

// CancelReply answers cancel.
type CancelReply struct {
	Handle string       `cbor:"handle"`
	Result CancelResult `cbor:"result"`
}

// LeaseGranted answers approve.
type LeaseGranted struct {
	Lease LeaseView `cbor:"lease"`
}

// ActionView is an action as listed for the operator.
type ActionView struct {
	Handle      string      `cbor:"handle"`
	Session     string      `cbor:"session,omitempty"`
	Goal        string      `cbor:"goal,omitempty"`
	Executable  string      `cbor:"executable"`
	Fingerprint []byte      `cbor:"fingerprint"`
	State       ActionState `cbor:"state"`
	Outcome     Outcome     `cbor:"outcome,omitzero"` // zero (absent) until the action ends
	CreatedUnix int64       `cbor:"created_unix"`
	// Argv are the arguments after argv[0], cut as ListedArgv says;
	// ExitCode and Signal are the result's, once it ended.
	Argv          []string `cbor:"argv,omitempty"`
	ArgvTruncated bool     `cbor:"argv_truncated,omitempty"`
	ExitCode      *int32   `cbor:"exit_code,omitempty"`
	Signal        uint8    `cbor:"signal,omitempty"`
}

func (a *ActionView) validate() error {
	err := firstErr(checkName("handle", a.Handle), checkText("session", a.Session, maxName),
		checkText("goal", a.Goal, maxName), checkText("executable", a.Executable, maxPath),
		checkDigest("fingerprint", a.Fingerprint), checkEnum(a.State), checkListedArgv(a.Argv))
	if err == nil && a.Outcome != 0 {
		err = checkEnum(a.Outcome)
	}
	return err
}

// MaxListedArgv bounds the argv bytes one listed action or lease carries,
// so that a listing page of MaxList entries stays far below MaxAgentFrame. The
// whole argv is in the approval card and the receipt.
const MaxListedArgv = 1024

// ListedArgv is argv as a listing carries it: whole elements while they
// fit in MaxListedArgv bytes, then the next one cut at a UTF-8 boundary;
// truncated says whether anything was left out.
func ListedArgv(argv []string) (listed []string, truncated bool) {
	left := MaxListedArgv
	for _, a := range argv {
		if len(a) > left {
			cut := left
			for cut > 0 && !utf8.RuneStart(a[cut]) {
				cut--
			}
			return append(listed, a[:cut]), true
		}
		listed = append(listed, a)
		left -= len(a)
	}
	return listed, false
}

func checkListedArgv(argv []string) error {
	if err := checkArgs("argv", argv, 1); err != nil {
		return err
	}
	n := 0
	for _, a := range argv {
		n += len(a)
	}
	if n > MaxListedArgv {
		return fmt.Errorf("argv: %d bytes in a listing exceeds the cap of %d", n, MaxListedArgv)
	}
	return nil
}

// Listing answers list with one page; only the list that was asked for
// is present. Truncated says that more entries follow the last one: ask
// again with After set to its id.
type Listing struct {
	Approvals []ApprovalView `cbor:"approvals,omitempty"`
	Leases    []LeaseView    `cbor:"leases,omitempty"`
	Actions   []ActionView   `cbor:"actions,omitempty"`
	Truncated bool           `cbor:"truncated,omitempty"`
}

// GoalReply describes a goal after goal_create, goal_revise,
// goal_set_state, goal_attest, goal_show or goal_verify. View, when set,
// is the goal's view as JSON text (docs/goals.md): its document, and its
// latest verdict under the current revision, or the verdict just made.
type GoalReply struct {
	Goal     string    `cbor:"goal"`
	Revision uint64    `cbor:"revision"`
	State    GoalState `cbor:"state"`
	View     string    `cbor:"view,omitempty"`
}

// GoalListing answers goal_list.
type GoalListing struct {
	Goals []GoalReply `cbor:"goals,omitempty"`
}

// OutputChunk is one frame of the answer to Follow: Data, redacted
// output of Stream from Offset (in that redacted stream), in order; or
// NotStreamed, the bytes of Stream from Offset that this follower is not
// sent because the broker no longer holds them (it attached too late,
// its parked offsets expired, or a bound was reached:
// broker/internal/follow), which `broker output` may still show from
// the receipt's head and tail. Offset is where the previous chunk of the
// stream ended. A chunk with no stream is a heartbeat, sent when the
// action has been quiet for a second, so that a follower can tell a
// silent action from a broker that stopped answering.
type OutputChunk struct {
	Handle      string       `cbor:"handle"`
	Stream      OutputStream `cbor:"stream,omitzero"`
	Offset      uint64       `cbor:"offset,omitempty"`
	Data        []byte       `cbor:"data,omitempty"`
	NotStreamed uint64       `cbor:"not_streamed,omitempty"`
}

// MaxChunkData bounds the data of one OutputChunk.
const MaxChunkData = 64 << 10

// maxOffset bounds an offset in an output stream, and a range's end
// (warrant.cddl's some-uint).
const maxOffset = 1<<63 - 1

// OK acknowledges a request that has nothing else to say.
type OK struct{}

// ApprovalState answers approval_wait: the request's state, pending when
// the budget ran out first, the reason it ended (a denial's, or why it
// expired) and, once approved, its lease.
type ApprovalState struct {
	RequestID string       `cbor:"request_id"`
	State     RequestState `cbor:"state"`
	Reason    string       `cbor:"reason,omitempty"`
	LeaseID   string       `cbor:"lease_id,omitempty"` // the lease the approval granted
}

func (*Accepted) Type() MsgType         { return TypeAccepted }
func (*ApprovalRequired) Type() MsgType { return TypeApprovalRequired }
func (*Status) Type() MsgType           { return TypeStatus }
func (*WaitTimeout) Type() MsgType      { return TypeWaitTimeout }
func (*CancelReply) Type() MsgType      { return TypeCancelReply }
func (*LeaseGranted) Type() MsgType     { return TypeLeaseGranted }
func (*Listing) Type() MsgType          { return TypeListing }
func (*GoalReply) Type() MsgType        { return TypeGoalReply }
func (*GoalListing) Type() MsgType      { return TypeGoalListing }
func (*OK) Type() MsgType               { return TypeOK }
func (*ApprovalState) Type() MsgType    { return TypeApprovalState }
func (*OutputChunk) Type() MsgType      { return TypeOutputChunk }

func (m *Accepted) validate() error {
	return firstErr(checkName("handle", m.Handle), checkText("lease", m.Lease, maxName), checkText("contract", m.Contract, maxName))
}
func (m *ApprovalRequired) validate() error { return m.Request.validate() }
func (m *Status) validate() error {
	err := firstErr(checkName("handle", m.Handle), checkEnum(m.State))
	if err == nil && m.Result != nil {
		err = m.Result.validate()
	}
	return err
}
func (m *WaitTimeout) validate() error {
	return firstErr(checkName("handle", m.Handle), checkEnum(m.State))
}
func (m *CancelReply) validate() error {
	return firstErr(checkName("handle", m.Handle), checkEnum(m.Result))
}
func (m *LeaseGranted) validate() error { return m.Lease.validate() }
func (m *Listing) validate() error {
	err := firstErr(checkLen("approvals", len(m.Approvals), MaxList),
		checkLen("leases", len(m.Leases), MaxList), checkLen("actions", len(m.Actions), MaxList))
	for i := 0; err == nil && i < len(m.Approvals); i++ {
		err = m.Approvals[i].validate()
	}
	for i := 0; err == nil && i < len(m.Leases); i++ {
		err = m.Leases[i].validate()
	}
	for i := 0; err == nil && i < len(m.Actions); i++ {
		err = m.Actions[i].validate()
	}
	if err != nil {
		return fmt.Errorf("listing: %w", err)
	}
	return nil
}
func (m *GoalReply) validate() error {
	return firstErr(checkName("goal", m.Goal), checkEnum(m.State), checkText("view", m.View, MaxGoalView))
}
func (m *GoalListing) validate() error {
	err := checkLen("goals", len(m.Goals), MaxList)
	for i := 0; err == nil && i < len(m.Goals); i++ {
		if m.Goals[i].View != "" {
			err = fmt.Errorf("goals[%d]: a listing carries no views", i)
		} else {
			err = m.Goals[i].validate()
		}
	}
	return err
}
func (*OK) validate() error { return nil }

// ContractOffers answers ContractOffer: the library contracts whose
// executable fits the request's and whose grammar accepts its argv, the
// one covering most first.
type ContractOffers struct {
	Offers []ContractOfferItem `cbor:"offers,omitempty"`
}

// ContractOfferItem is one contract offered for a request: its name,
// description and grammar as the card shows it (Usage), and the command
// lines it covers, quoted for a shell: the request's first, then earlier
// requests a grant for it would bind (the same executable, workspace and
// profile), newest first.
type ContractOfferItem struct {
	Name        string   `cbor:"name"`
	Description string   `cbor:"description,omitempty"`
	Usage       string   `cbor:"usage"`
	Covers      []string `cbor:"covers"`
	// Program is the executable file a grant of it would bind: the
	// request's, which is the one the contract's executable resolves to
	// in the request's workspace.
	Program ProgramFile `cbor:"program"`
}

// ProgramFile is an executable file as the operator is shown it before a
// contract grant binds it: its canonical path and SHA-256 (a script's
// own; the grant binds its pinned interpreter as well).
type ProgramFile struct {
	Path   string `cbor:"path"`
	SHA256 []byte `cbor:"sha256"`
}

func (p *ProgramFile) validate(field string) error {
	return firstErr(checkAbs(field+".path", p.Path), checkDigest(field+".sha256", p.SHA256))
}

func (*ContractOffers) Type() MsgType { return TypeContractOffers }

func (m *ContractOffers) validate() error {
	err := checkLen("offers", len(m.Offers), MaxOffers)
	for i := 0; err == nil && i < len(m.Offers); i++ {
		o := &m.Offers[i]
		err = firstErr(checkName("name", o.Name), checkText("description", o.Description, maxText),
			checkText("usage", o.Usage, MaxUsage), checkLen("covers", len(o.Covers), MaxOfferCovers))
		if err == nil && len(o.Covers) == 0 {
			err = fmt.Errorf("offers[%d].covers: empty", i)
		}
		if err == nil {
			err = o.Program.validate("program")
		}
		for j := 0; err == nil && j < len(o.Covers); j++ {
			field := fmt.Sprintf("offers[%d].covers[%d]", i, j)
			if err = checkText(field, o.Covers[j], MaxCoverLine); err == nil && o.Covers[j] == "" {
				err = fmt.Errorf("%s: empty", field)
			}
		}
	}
	return err
}
func (m *ApprovalState) validate() error {
	return firstErr(checkName("request_id", m.RequestID), checkEnum(m.State), checkText("reason", m.Reason, maxText),
		checkText("lease_id", m.LeaseID, maxName))
}
func (m *OutputChunk) validate() error {
	err := checkName("handle", m.Handle)
	switch {
	case err != nil:
	case m.Stream == 0 && (len(m.Data) > 0 || m.NotStreamed > 0 || m.Offset > 0):
		err = fmt.Errorf("output_chunk: data, not_streamed or offset without a stream")
	case m.Stream != 0 && (len(m.Data) > 0) == (m.NotStreamed > 0):
		err = fmt.Errorf("output_chunk: a chunk of a stream carries either data or not_streamed")
	case m.Stream != 0:
		err = checkEnum(m.Stream)
	}
	if err == nil && len(m.Data) > MaxChunkData {
		err = fmt.Errorf("output_chunk: data: %d bytes exceeds the cap of %d", len(m.Data), MaxChunkData)
	}
	if end := m.Offset + m.NotStreamed + uint64(len(m.Data)); err == nil && (end > maxOffset || end < m.Offset) {
		err = fmt.Errorf("output_chunk: a range ending past %d exceeds the cap of %d", m.Offset, uint64(maxOffset))
	}
	return err
}
