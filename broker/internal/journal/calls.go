package journal

import (
	"bytes"
	"context"
	"database/sql"
	"errors"

	"warrant/wire"
)

// Call is a submit's call id in its session (a namespace of its own; ""
// is the namespace of submits without a session), with the canonical
// bytes of the request it carries: the submit without its call id.
type Call struct {
	Session string
	ID      string
	Request []byte
}

// Bound is what a call id already stands for: the action it started, or
// else the latest approval request it raised — still pending, denied, or
// (neither field set) approved or expired, when the submit goes on (and
// an expired request's submit asks anew).
type Bound struct {
	Handle  string             // the action, once one was started
	Pending *wire.ApprovalView // its approval request, while pending
	Denial  *wire.Error        // APPROVAL_DENIED, once its request was denied

	denied string // the denied request, marked reported by Call
}

// ErrCallStarted is returned by Checkpoint and RequestApproval when the
// call id was bound to an action meanwhile (a concurrent submit of the
// same call): nothing was recorded, and the caller answers with Call.
var ErrCallStarted = errors.New("the call id already started an action")

// Call returns what c's call id already stands for in its session, or
// nil when it is unused. The same call id with another request is
// refused with ARGUMENTS_INVALID. A denial it returns is marked reported,
// as RequestApproval marks one, so that the next submit of the command
// under another call id asks anew.
func (j *Journal) Call(ctx context.Context, c *Call) (*Bound, error) {
	var b *Bound
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var err error
		b, err = j.readCall(ctx, tx, c)
		if err != nil || b == nil || b.Denial == nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE approval_requests SET state = 'denial_reported' WHERE id = ? AND state = 'denied'`, b.denied)
		return err
	})
	if err != nil {
		return nil, wrapUnlessCoded("read call id", err)
	}
	return b, nil
}

func (j *Journal) readCall(ctx context.Context, q querier, c *Call) (*Bound, error) {
	var request []byte
	var approval, handle sql.NullString
	err := q.QueryRowContext(ctx, `SELECT request, approval_id, handle FROM submit_calls WHERE session = ? AND call_id = ?`,
		c.Session, c.ID).Scan(&request, &approval, &handle)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	case !bytes.Equal(request, c.Request):
		where := "in session " + c.Session
		if c.Session == "" {
			where = "without a session"
		}
		return nil, wire.Errorf(wire.CodeArgumentsInvalid,
			"call_id %q was already used %s for another request (another executable, argv, cwd, profile, goal or workspace); "+
				"a call_id names exactly one request: give this one a new call_id", c.ID, where)
	case handle.Valid:
		return &Bound{Handle: handle.String}, nil
	}
	id, b, now := approval.String, &Bound{}, j.now()
	state, _, reason, err := j.requestStateAt(ctx, q, id, now)
	switch {
	case err != nil:
		return nil, err
	case state == wire.RequestPending:
		b.Pending, err = j.readApprovalAt(ctx, q, id, now)
	case state == wire.RequestDenied:
		b.denied = id
		b.Denial = wire.Errorf(wire.CodeApprovalDenied, "call_id %q: the operator denied its approval request %s (%s); "+
			"nothing ran, and nothing will under this call_id: a new call_id asks anew", c.ID, id, reason)
	}
	return b, err
}

// bindCall records, in the caller's transaction, that c started the
// action handle or raised the approval request approvalID (one of them
// is ""). A call id already bound to an action is ErrCallStarted; one
// used for another request is ARGUMENTS_INVALID. A call id that raised
// an approval request takes the action it then starts, or the newer
// request raised when its lease no longer matched.
func (j *Journal) bindCall(ctx context.Context, tx *sql.Tx, c *Call, handle, approvalID string) error {
	if c == nil {
		return nil
	}
	b, err := j.readCall(ctx, tx, c)
	switch {
	case err != nil:
		return err
	case b == nil:
		_, err = tx.ExecContext(ctx, `INSERT INTO submit_calls (session, call_id, request, approval_id, handle, created_unix)
			VALUES (?, ?, ?, ?, ?, ?)`, c.Session, c.ID, c.Request, nullable(approvalID), nullable(handle), j.now().Unix())
	case b.Handle != "":
		return ErrCallStarted
	case handle != "":
		_, err = tx.ExecContext(ctx, `UPDATE submit_calls SET handle = ? WHERE session = ? AND call_id = ?`, handle, c.Session, c.ID)
	default:
		_, err = tx.ExecContext(ctx, `UPDATE submit_calls SET approval_id = ? WHERE session = ? AND call_id = ?`, approvalID, c.Session, c.ID)
	}
	return err
}

// nullable is s, or NULL when s is empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
