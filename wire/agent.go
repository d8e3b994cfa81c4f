package wire

import "fmt"

// ActionRequest is the closed request shape of docs/architecture.md §2.1: an
// executable, literal argv (argv[0] excluded), a workspace-relative cwd and
// a profile, plus the routing fields goal and session. There is no shell
// anywhere: ";", "|", "$()" and newlines in argv are ordinary characters.
type ActionRequest struct {
	Executable string   `cbor:"executable"` // a name resolved on the sanitized PATH, or an absolute path
	Argv       []string `cbor:"argv"`
	Cwd        string   `cbor:"cwd"`
	Profile    Profile  `cbor:"profile"`
	Goal       string   `cbor:"goal,omitempty"`
	Session    string   `cbor:"session,omitempty"`
	// Step names a step of the goal: the action may start only when the
	// step's dependencies are VERIFIED_DONE under the goal's current
	// revision (STEP_BLOCKED otherwise), and its receipt names the step.
	Step string `cbor:"step,omitempty"`
	// Egress asks for network access: "host:port" entries
	// (ParseEgressEntry) or the names of presets the operator defined
	// (<state>/egress). The broker expands them into the identity's exact
	// list, which a human approves; none asked, none granted.
	Egress []string `cbor:"egress,omitempty"`
}

func (r *ActionRequest) validate() error {
	return firstErr(checkName("executable", r.Executable),
		checkArgs("argv", r.Argv, 0),
		checkText("cwd", r.Cwd, maxPath),
		checkEnum(r.Profile),
		checkText("goal", r.Goal, maxName),
		checkText("session", r.Session, maxName),
		checkText("step", r.Step, maxName),
		CheckEgressAsked(r.Egress))
}

// Submit asks the broker to run one action in the workspace. CallID,
// when set, makes the submit idempotent within its session: a repeat of
// the same call id with the same workspace and request answers what the
// first one started (or asked for) and never starts a second run; with
// any other workspace or request it is refused (broker package doc). It
// is not part of the request, so it is not in the identity or its
// fingerprint.
type Submit struct {
	Workspace string        `cbor:"workspace"` // absolute path of the workspace root
	Request   ActionRequest `cbor:"request"`
	CallID    string        `cbor:"call_id,omitempty"`
}

// Query asks for the state of a handle.
type Query struct {
	Handle string `cbor:"handle"`
}

// Wait asks for the state of a handle once it is terminal, or after at most
// BudgetMs milliseconds (then the reply is WaitTimeout, which is not a
// failure).
type Wait struct {
	Handle   string `cbor:"handle"`
	BudgetMs uint32 `cbor:"budget_ms"`
}

// Cancel asks the broker to end a running action. It does not undo anything.
type Cancel struct {
	Handle string `cbor:"handle"`
	Reason string `cbor:"reason,omitempty"`
}

// Follow asks for the redacted output of a handle as the broker releases
// it, from StdoutFrom and StderrFrom (offsets in each redacted stream;
// 0, the first byte, when absent), or of Stream alone when it is set.
// It is the one request answered by several frames: any number of
// OutputChunk frames, then the handle's final Status (terminal or
// unknown), or an Error. The broker never lets a follower hold up the
// action, and sends it every byte from its offsets in order, from the
// action's spill when it is behind; a range no one holds any more is an
// OutputChunk's NotStreamed at its offset (broker/internal/follow).
// Limit, when set, makes it a page: at most Limit bytes of data of each
// stream, and once one stream reached it, the Status as it stands then
// (the action may still be running); what was not sent stays held for a
// Follow from the offsets reached.
type Follow struct {
	Handle     string       `cbor:"handle"`
	Stream     OutputStream `cbor:"stream,omitzero"`
	StdoutFrom uint64       `cbor:"stdout_from,omitempty"`
	StderrFrom uint64       `cbor:"stderr_from,omitempty"`
	Limit      uint64       `cbor:"limit,omitempty"`
}

// GoalCreate opens a new goal at revision 1. Spec, when set, is the goal
// document (docs/goals.md: title, workspace, steps with their criteria)
// as JSON text; the broker decodes it strictly and validates its step
// graph. Without it the goal has no steps and can never be verified done.
type GoalCreate struct {
	Title string `cbor:"title"`
	Spec  string `cbor:"spec,omitempty"`
}

// GoalRevise bumps a goal's revision, which invalidates its leases and
// its verdicts. Spec, when set, replaces the goal document for the new
// revision; without it the new revision keeps the current one.
type GoalRevise struct {
	Goal string `cbor:"goal"`
	Spec string `cbor:"spec,omitempty"`
}

// ApprovalWait asks for the state of an approval request once it is no
// longer pending, or after at most BudgetMs milliseconds (then the reply
// says pending, which is not a failure). It is how a requester learns a
// decision made elsewhere; a denial it answers counts as reported to the
// requester.
type ApprovalWait struct {
	RequestID string `cbor:"request_id"`
	BudgetMs  uint32 `cbor:"budget_ms"`
}

// GoalShow asks for a goal: its document, revision, state and latest
// verdict under the current revision.
type GoalShow struct {
	Goal string `cbor:"goal"`
}

// GoalVerify asks the broker's evidence oracle for a verdict on a goal
// under its current revision; the verdict is signed and appended to the
// receipt log.
type GoalVerify struct {
	Goal string `cbor:"goal"`
}

// GoalList asks for every goal.
type GoalList struct{}

func (*Submit) Type() MsgType     { return TypeSubmit }
func (*Query) Type() MsgType      { return TypeQuery }
func (*Wait) Type() MsgType       { return TypeWait }
func (*Cancel) Type() MsgType     { return TypeCancel }
func (*Follow) Type() MsgType     { return TypeFollow }
func (*GoalCreate) Type() MsgType { return TypeGoalCreate }
func (*GoalRevise) Type() MsgType { return TypeGoalRevise }
func (*GoalShow) Type() MsgType   { return TypeGoalShow }
func (*GoalVerify) Type() MsgType { return TypeGoalVerify }
func (*GoalList) Type() MsgType   { return TypeGoalList }

func (*ApprovalWait) Type() MsgType { return TypeApprovalWait }

func (m *Submit) validate() error {
	return firstErr(checkAbs("workspace", m.Workspace), m.Request.validate(), checkText("call_id", m.CallID, maxName))
}
func (m *Query) validate() error { return checkName("handle", m.Handle) }
func (m *Wait) validate() error  { return checkName("handle", m.Handle) }
func (m *Cancel) validate() error {
	return firstErr(checkName("handle", m.Handle), checkText("reason", m.Reason, maxText))
}
func (m *Follow) validate() error {
	err := checkName("handle", m.Handle)
	switch {
	case err != nil:
	case m.Stream != 0:
		err = checkEnum(m.Stream)
	}
	switch {
	case err != nil:
	case m.Stream == Stdout && m.StderrFrom > 0:
		err = fmt.Errorf("follow: stderr_from: stderr is not followed")
	case m.Stream == Stderr && m.StdoutFrom > 0:
		err = fmt.Errorf("follow: stdout_from: stdout is not followed")
	}
	if n := max(m.StdoutFrom, m.StderrFrom, m.Limit); err == nil && n > maxOffset {
		err = fmt.Errorf("follow: offset or limit %d exceeds the cap of %d", n, uint64(maxOffset))
	}
	return err
}
func (m *ApprovalWait) validate() error {
	return checkName("request_id", m.RequestID)
}
func (m *GoalCreate) validate() error {
	return firstErr(checkText("title", m.Title, maxText), checkText("spec", m.Spec, MaxGoalJSON))
}
func (m *GoalRevise) validate() error {
	return firstErr(checkName("goal", m.Goal), checkText("spec", m.Spec, MaxGoalJSON))
}
func (m *GoalShow) validate() error   { return checkName("goal", m.Goal) }
func (m *GoalVerify) validate() error { return checkName("goal", m.Goal) }
func (*GoalList) validate() error     { return nil }
