package admission

import (
	"context"
	"errors"
	"time"

	"warrant/broker/internal/journal"
	"warrant/wire"
)

// CallOf is the journal's call for a submit with a call id (nil without
// one): its session, the id, and the canonical submit without the call
// id, its goal named (goal "" is the default goal), so that any
// difference in workspace or request is another request.
func CallOf(s *wire.Submit, goal string) (*journal.Call, error) {
	if s.CallID == "" {
		return nil, nil
	}
	req := *s
	req.CallID, req.Request.Goal = "", goal
	blob, err := wire.Canonical(&req)
	if err != nil {
		return nil, err
	}
	return &journal.Call{Session: s.Request.Session, ID: s.CallID, Request: blob}, nil
}

// Repeated answers a submit whose call id already stands for something
// (the broker's package doc, "Call ids"), from the journal j and with
// the clock now: the action it started, as its status now; its approval
// request while that is still pending under the goal's current revision
// and within its TTL; its denial. It answers nil,
// nil when the submit goes on through the pipeline: the call id is
// unused, or its approval request was approved (the checkpoint then binds
// the action to it) or can no longer be approved (expired or overdue,
// or its goal moved on).
func Repeated(ctx context.Context, j *journal.Journal, now func() time.Time, c *journal.Call) (wire.Message, error) {
	if c == nil {
		return nil, nil
	}
	bound, err := j.Call(ctx, c)
	if err != nil || bound == nil {
		return nil, err
	}
	switch {
	case bound.Handle != "":
		// The action's checkpoint may still be on its way to the disk:
		// it is answered, as its first submit is, once durable.
		if err := j.Flush(); err != nil {
			return nil, NotDurable(bound.Handle, err)
		}
		return j.Status(ctx, bound.Handle)
	case bound.Denial != nil:
		return nil, bound.Denial
	case bound.Pending != nil:
		v := bound.Pending
		if g, err := j.Goal(ctx, v.Goal); err == nil && g.State == wire.GoalActive && g.Revision == v.GoalRevision &&
			!journal.Overdue(v.CreatedUnix, now()) {
			return &wire.ApprovalRequired{Request: *v}, nil
		}
	}
	return nil, nil
}

// Raced answers a submit whose call id a concurrent submit of the same
// call bound to an action while this one went through the pipeline
// (journal.ErrCallStarted): with that action. Any other error stands.
func Raced(ctx context.Context, j *journal.Journal, now func() time.Time, c *journal.Call, err error) (wire.Message, error) {
	if !errors.Is(err, journal.ErrCallStarted) {
		return nil, err
	}
	return Repeated(ctx, j, now, c)
}

// NotDurable refuses a submit whose action was checkpointed but whose
// record the journal could not make durable (err): its launcher is never
// told to proceed. A repeat of its call id is answered so too.
func NotDurable(handle string, err error) error {
	return wire.Errorf(wire.CodeIOFailed, "action %s was checkpointed but its record could not be made durable, so it was not run: %v", handle, err)
}
