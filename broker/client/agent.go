package client

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"warrant/wire"
)

// Submitted is the answer to Submit: either a handle (the action passed
// admission, matched a lease and was checkpointed) or an approval request
// a human must decide before submitting again.
type Submitted struct {
	Handle   string             // set when accepted, or when the call id already started it
	Lease    string             // when accepted: the lease whose use it consumed
	UsesLeft uint32             // when accepted: what that lease has left
	Contract string             // when a contract grant (Lease) admitted it: the contract's name
	Approval *wire.ApprovalView // set when approval is required
	Repeat   *wire.Status       // set when the call id already started the action: its state now
}

// Submit asks the broker to run req in the workspace (an absolute path;
// symlinks in it are resolved here, since the broker refuses them).
func (a *Agent) Submit(workspace string, req wire.ActionRequest) (Submitted, error) {
	return a.SubmitCall(workspace, req, "")
}

// SubmitCall is Submit with a call id (none when ""): submitting the same
// call id again in the session, with the same workspace and request,
// never starts a second run; it answers the action the call started
// (Repeat, with Handle), or its approval request while pending. The same
// call id with another request is refused (ARGUMENTS_INVALID).
func (a *Agent) SubmitCall(workspace string, req wire.ActionRequest, callID string) (Submitted, error) {
	return a.SubmitCallContext(context.Background(), workspace, req, callID)
}

// SubmitCallContext is SubmitCall, abandoned when ctx is done: then, as
// when the broker does not answer in time, the error says whether the
// submit was sent (and so may have been accepted).
func (a *Agent) SubmitCallContext(ctx context.Context, workspace string, req wire.ActionRequest, callID string) (Submitted, error) {
	ws, err := filepath.EvalSymlinks(workspace)
	if err == nil {
		ws, err = filepath.Abs(ws)
	}
	if err != nil {
		return Submitted{}, workspaceError(workspace, err)
	}
	reply, err := a.sock.roundTripContext(ctx, &wire.Submit{Workspace: ws, Request: req, CallID: callID}, 0)
	if err != nil {
		return Submitted{}, err
	}
	switch r := reply.(type) {
	case *wire.Accepted:
		return Submitted{Handle: r.Handle, Lease: r.Lease, UsesLeft: r.UsesLeft, Contract: r.Contract}, nil
	case *wire.ApprovalRequired:
		return Submitted{Approval: &r.Request}, nil
	case *wire.Status:
		return Submitted{Handle: r.Handle, Repeat: r}, nil
	}
	_, err = expect[*wire.Accepted](reply, nil)
	return Submitted{}, err
}

// budgetMs is a wait budget on the wire, at most 2³²-1 ms.
func budgetMs(budget time.Duration) uint32 {
	return uint32(min(max(budget.Milliseconds(), 0), 1<<32-1))
}

// workspaceError says why the workspace cannot be found, in the user's
// words; the system's own account is the Detail.
func workspaceError(ws string, err error) *wire.Error {
	why := "cannot be found"
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = "does not exist"
	case errors.Is(err, syscall.ENOTDIR):
		why = "is not a directory (or a part of its path is not)"
	case errors.Is(err, fs.ErrPermission):
		why = "cannot be reached: permission denied on the way"
	}
	return wire.Explain(wire.CodePathInvalid, err, "the workspace %s %s; pass an existing directory with --workspace DIR, or run from inside the project", ws, why)
}

// Query returns the state of an action.
func (a *Agent) Query(handle string) (*wire.Status, error) {
	return expect[*wire.Status](a.sock.roundTrip(&wire.Query{Handle: handle}))
}

// Wait returns the action's status once it is terminal or unknown. If the
// budget runs out first it returns nil and the state at that moment: a
// timeout of the wait is not a failure of the action.
func (a *Agent) Wait(handle string, budget time.Duration) (*wire.Status, wire.ActionState, error) {
	return a.WaitContext(context.Background(), handle, budget)
}

// WaitContext is Wait, abandoned when ctx is done. The wait is sent as
// polls of at most 10 s (the broker refuses budgets over its cap), each
// of which must be answered within its budget and the reply timeout; a
// live broker answers them while the action runs.
func (a *Agent) WaitContext(ctx context.Context, handle string, budget time.Duration) (*wire.Status, wire.ActionState, error) {
	reply, err := a.poll(ctx, budget, func(ms uint32) wire.Message { return &wire.Wait{Handle: handle, BudgetMs: ms} },
		func(r wire.Message) bool { _, ok := r.(*wire.WaitTimeout); return ok })
	if err != nil {
		return nil, 0, err
	}
	if t, ok := reply.(*wire.WaitTimeout); ok {
		return nil, t.State, nil
	}
	st, err := expect[*wire.Status](reply, nil)
	if err != nil {
		return nil, 0, err
	}
	return st, st.State, nil
}

// poll sends the wait request req makes for a budget in polls of at most
// maxPoll, until one answers other than waiting (waiting reports that it
// ran out of budget) or the budget is spent, and returns that answer.
func (a *Agent) poll(ctx context.Context, budget time.Duration, req func(ms uint32) wire.Message,
	waiting func(wire.Message) bool) (wire.Message, error) {
	end := time.Now().Add(budget)
	for {
		poll := max(min(time.Until(end), maxPoll), 0)
		reply, err := a.sock.roundTripContext(ctx, req(budgetMs(poll)), poll)
		if err != nil || !waiting(reply) || time.Until(end) <= 0 {
			return reply, err
		}
	}
}

// ApprovalWait returns the state of approval request id once it is no
// longer pending (approved, denied or expired) with the reason it ended,
// or pending when the budget runs out first. A request outlives the
// connection that waits for it, until its TTL (docs/architecture.md
// §2.3). A denial it returns counts as
// reported, so the next submit of the same action asks anew. Like Wait,
// a long budget is sent as polls of at most 10 s.
func (a *Agent) ApprovalWait(id string, budget time.Duration) (*wire.ApprovalState, error) {
	return a.ApprovalWaitContext(context.Background(), id, budget)
}

// ApprovalWaitContext is ApprovalWait, abandoned when ctx is done.
func (a *Agent) ApprovalWaitContext(ctx context.Context, id string, budget time.Duration) (*wire.ApprovalState, error) {
	return expect[*wire.ApprovalState](a.poll(ctx, budget,
		func(ms uint32) wire.Message { return &wire.ApprovalWait{RequestID: id, BudgetMs: ms} },
		func(r wire.Message) bool {
			s, ok := r.(*wire.ApprovalState)
			return ok && s.State == wire.RequestPending
		}))
}

// Cancel asks the broker to end an action. Nothing is undone.
func (a *Agent) Cancel(handle, reason string) (wire.CancelResult, error) {
	return a.CancelContext(context.Background(), handle, reason)
}

// CancelContext is Cancel, abandoned when ctx is done.
func (a *Agent) CancelContext(ctx context.Context, handle, reason string) (wire.CancelResult, error) {
	r, err := expect[*wire.CancelReply](a.sock.roundTripContext(ctx, &wire.Cancel{Handle: handle, Reason: reason}, 0))
	if err != nil {
		return 0, err
	}
	return r.Result, nil
}

// CreateGoal opens a goal at revision 1 with the goal document spec
// (JSON text, docs/goals.md; "" for a goal without steps).
func (a *Agent) CreateGoal(title, spec string) (*wire.GoalReply, error) {
	return expect[*wire.GoalReply](a.sock.roundTrip(&wire.GoalCreate{Title: title, Spec: spec}))
}

// ReviseGoal bumps a goal's revision, with spec as its new document (""
// keeps the current one); its leases and verdicts stop counting.
func (a *Agent) ReviseGoal(goal, spec string) (*wire.GoalReply, error) {
	return expect[*wire.GoalReply](a.sock.roundTrip(&wire.GoalRevise{Goal: goal, Spec: spec}))
}

// ShowGoal returns a goal with its view.
func (a *Agent) ShowGoal(goal string) (*wire.GoalReply, error) {
	return expect[*wire.GoalReply](a.sock.roundTrip(&wire.GoalShow{Goal: goal}))
}

// VerifyGoal asks the evidence oracle for a signed verdict on the goal
// under its current revision.
func (a *Agent) VerifyGoal(goal string) (*wire.GoalReply, error) {
	return expect[*wire.GoalReply](a.sock.roundTrip(&wire.GoalVerify{Goal: goal}))
}

// ListGoals lists every goal.
func (a *Agent) ListGoals() (*wire.GoalListing, error) {
	return expect[*wire.GoalListing](a.sock.roundTrip(&wire.GoalList{}))
}
