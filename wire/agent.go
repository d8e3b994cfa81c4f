package wire

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
}

func (r *ActionRequest) validate() error {
	return firstErr(checkName("executable", r.Executable),
		checkArgs("argv", r.Argv, 0),
		checkText("cwd", r.Cwd, maxPath),
		checkEnum(r.Profile),
		checkText("goal", r.Goal, maxName),
		checkText("session", r.Session, maxName))
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
// it. It is the one request answered by several frames: any number of
// OutputChunk frames, then the handle's final Status (terminal or
// unknown), or an Error. The broker never lets a slow follower hold up
// the action: what does not fit its bounded queue is counted and reported
// as an OutputChunk's NotStreamed instead (broker/internal/follow).
type Follow struct {
	Handle string `cbor:"handle"`
}

// GoalCreate opens a new goal at revision 1.
type GoalCreate struct {
	Title string `cbor:"title"`
}

// GoalRevise bumps a goal's revision, which invalidates its leases.
type GoalRevise struct {
	Goal string `cbor:"goal"`
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

func (*Submit) Type() MsgType     { return TypeSubmit }
func (*Query) Type() MsgType      { return TypeQuery }
func (*Wait) Type() MsgType       { return TypeWait }
func (*Cancel) Type() MsgType     { return TypeCancel }
func (*Follow) Type() MsgType     { return TypeFollow }
func (*GoalCreate) Type() MsgType { return TypeGoalCreate }
func (*GoalRevise) Type() MsgType { return TypeGoalRevise }

func (*ApprovalWait) Type() MsgType { return TypeApprovalWait }

func (m *Submit) validate() error {
	return firstErr(checkAbs("workspace", m.Workspace), m.Request.validate(), checkText("call_id", m.CallID, maxName))
}
func (m *Query) validate() error { return checkName("handle", m.Handle) }
func (m *Wait) validate() error  { return checkName("handle", m.Handle) }
func (m *Cancel) validate() error {
	return firstErr(checkName("handle", m.Handle), checkText("reason", m.Reason, maxText))
}
func (m *Follow) validate() error     { return checkName("handle", m.Handle) }
func (m *GoalCreate) validate() error { return checkText("title", m.Title, maxText) }
func (m *GoalRevise) validate() error { return checkName("goal", m.Goal) }
func (m *ApprovalWait) validate() error {
	return checkName("request_id", m.RequestID)
}
