package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"warrant/wire"
)

// Bounds on what one approval may grant. A lease is finite by construction.
const (
	MaxLeaseUses = 10000
	MaxLeaseTTL  = 30 * 24 * time.Hour
)

// recentlyEnded is how many of the requests decided or expired last
// Approvals lists after the pending ones.
const recentlyEnded = 16

// RequestApproval returns the approval request a human must decide for
// exactly this (goal, revision, fingerprint). A pending request is reused,
// so an agent that submits the same action again sees the same request id
// instead of flooding the operator; an expired one is not. If the latest
// request for it was denied and the denial was not reported yet (by
// Decision), it is reported now, once, as APPROVAL_DENIED, and marked
// reported: nothing of it is reusable, and the next submit asks anew.
// The request carries the identity, its fingerprint and the limitations
// text the operator's card shows beside it. A call (nil for none) is
// bound to the request it gets, new or reused, in the same transaction
// (bindCall); a reported denial binds nothing.
func (j *Journal) RequestApproval(ctx context.Context, g Goal, session string, id *wire.CommandIdentity, fp []byte,
	limitations string, call *Call) (*wire.ApprovalView, error) {
	var view *wire.ApprovalView
	var denied error // committed, then reported
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var rid, state, reason string
		err := tx.QueryRowContext(ctx, `SELECT id, state, reason FROM approval_requests
			WHERE goal = ? AND goal_revision = ? AND fingerprint = ? AND state IN ('pending', 'denied')
			AND id NOT IN (SELECT approval_id FROM approval_expiries)
			ORDER BY created_unix DESC, rowid DESC LIMIT 1`, g.ID, g.Revision, fp).Scan(&rid, &state, &reason)
		switch {
		case err == nil && state == "denied":
			if _, err := tx.ExecContext(ctx, `UPDATE approval_requests SET state = 'denial_reported' WHERE id = ?`, rid); err != nil {
				return err
			}
			if reason == "" {
				reason = "no reason given"
			}
			denied = wire.Errorf(wire.CodeApprovalDenied, "the operator denied approval request %s (%s); submitting again asks anew", rid, reason)
			return nil
		case err == nil:
			if view, err = readApproval(ctx, tx, rid); err != nil {
				return err
			}
			return j.bindCall(ctx, tx, call, "", rid)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		view = &wire.ApprovalView{ID: NewID("ar-"), Goal: g.ID, GoalRevision: g.Revision, Session: session,
			Identity: *id, Fingerprint: fp, Limitations: limitations, CreatedUnix: j.now().Unix(), State: wire.RequestPending}
		blob, err := wire.Canonical(id)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approval_requests
			(id, goal, goal_revision, session, fingerprint, identity, limitations, created_unix, state)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')`,
			view.ID, g.ID, g.Revision, session, fp, blob, view.Limitations, view.CreatedUnix)
		if err != nil {
			return err
		}
		return j.bindCall(ctx, tx, call, "", view.ID)
	})
	if err != nil {
		return nil, wrapUnlessCoded("request approval", err)
	}
	if denied != nil {
		return nil, denied
	}
	return view, nil
}

func readApproval(ctx context.Context, q querier, id string) (*wire.ApprovalView, error) {
	v := &wire.ApprovalView{ID: id}
	var blob []byte
	err := q.QueryRowContext(ctx, `SELECT goal, goal_revision, session, fingerprint, identity, limitations, created_unix
		FROM approval_requests WHERE id = ?`, id).Scan(&v.Goal, &v.GoalRevision, &v.Session, &v.Fingerprint, &blob, &v.Limitations, &v.CreatedUnix)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "approval request %q does not exist", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read approval request %s: %w", id, err)
	}
	if err := wire.DecodeCanonical(blob, &v.Identity); err != nil {
		return nil, fmt.Errorf("decode approval request %s: %w", id, err)
	}
	if v.State, _, v.Reason, err = requestState(ctx, q, id); err != nil {
		return nil, err
	}
	return v, nil
}

// requestState returns the state of request id as the wire says it, the
// state column it has in approval_requests, and the reason it ended: a
// denial's, or why it expired (migration 5 keeps expiries beside it).
func requestState(ctx context.Context, q querier, id string) (wire.RequestState, string, string, error) {
	var column, reason string
	var expiry sql.NullString
	err := q.QueryRowContext(ctx, `SELECT r.state, r.reason, e.reason FROM approval_requests r
		LEFT JOIN approval_expiries e ON e.approval_id = r.id WHERE r.id = ?`, id).Scan(&column, &reason, &expiry)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", "", wire.Errorf(wire.CodeArgumentsInvalid, "approval request %q does not exist", id)
	}
	if err != nil {
		return 0, "", "", fmt.Errorf("read approval request %s: %w", id, err)
	}
	switch {
	case expiry.Valid:
		return wire.RequestExpired, column, expiry.String, nil
	case column == "pending":
		return wire.RequestPending, column, "", nil
	case column == "approved":
		return wire.RequestApproved, column, "", nil
	}
	if reason == "" {
		reason = "no reason given"
	}
	return wire.RequestDenied, column, reason, nil // denied or denial_reported
}

// Approvals lists one page of the requests still waiting for a decision,
// oldest first: at most limit of them after the request after (see page),
// and whether more pending ones follow (truncated). The last page ends,
// while the limit allows, with the recentlyEnded requests decided or
// expired last, newest first, each with its state and reason, so the
// operator sees what became of a request that is no longer pending; they
// are a bounded look back, not paged.
func (j *Journal) Approvals(ctx context.Context, after string, limit int) (_ []wire.ApprovalView, truncated bool, _ error) {
	// One read transaction, one snapshot: a request decided or expired
	// meanwhile is either still pending here or among the ended, never
	// both. Read-only, it begins DEFERRED and takes no write lock.
	tx, err := j.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, false, fmt.Errorf("list approvals: %w", err)
	}
	defer tx.Rollback()
	cond, args, err := page(ctx, tx, "approval_requests", "id", after, false)
	if err != nil {
		return nil, false, fmt.Errorf("list approvals: %w", err)
	}
	ids, err := column[string](ctx, tx, `SELECT id FROM approval_requests WHERE state = 'pending'
		AND id NOT IN (SELECT approval_id FROM approval_expiries) AND `+cond+` ORDER BY created_unix, rowid LIMIT ?`, append(args, limit+1)...)
	// (A contract grant's request is never pending; the ended ones below
	// leave grants out: `broker contracts list` shows them.)
	if err != nil {
		return nil, false, fmt.Errorf("list approvals: %w", err)
	}
	j.crashPoint("approvals:pending-read")
	if truncated = len(ids) > limit; truncated {
		ids = ids[:limit]
	} else {
		ended, err := column[string](ctx, tx, `SELECT r.id FROM approval_requests r
		LEFT JOIN approval_expiries e ON e.approval_id = r.id WHERE (r.state != 'pending' OR e.approval_id IS NOT NULL)
		AND r.id NOT IN (SELECT approval_id FROM contract_grants)
		ORDER BY COALESCE(e.expired_unix, r.decided_unix) DESC, r.rowid DESC LIMIT ?`, min(recentlyEnded, limit-len(ids)))
		if err != nil {
			return nil, false, fmt.Errorf("list approvals: %w", err)
		}
		ids = append(ids, ended...)
	}
	out := make([]wire.ApprovalView, 0, len(ids))
	for _, id := range ids {
		v, err := readApproval(ctx, tx, id)
		if err != nil {
			return nil, false, err
		}
		out = append(out, *v)
	}
	return out, truncated, nil
}

// Approve decides a pending request by minting a lease bound to its goal
// id and revision, its workspace identity and fingerprint, the request id,
// an expiry ttl from now, and uses. The goal must still be active and at
// the request's revision.
//
// pin, when not nil, rebinds the request's identity (the operator pinned
// another executable binding) and returns the fingerprint the lease is
// bound to instead of the request's.
func (j *Journal) Approve(ctx context.Context, requestID string, uses uint32, ttl time.Duration,
	pin func(*wire.CommandIdentity) ([]byte, error)) (*wire.LeaseView, error) {
	if uses < 1 || uses > MaxLeaseUses {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "uses must be between 1 and %d, not %d", MaxLeaseUses, uses)
	}
	if ttl < time.Second || ttl > MaxLeaseTTL {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "the lease lifetime must be between 1s and %s, not %s", MaxLeaseTTL, ttl)
	}
	var lease *wire.LeaseView
	err := j.tx(ctx, func(tx *sql.Tx) error {
		v, err := decidable(ctx, tx, requestID)
		if err != nil {
			return err
		}
		g, err := readGoal(ctx, tx, v.Goal)
		if err != nil {
			return err
		}
		if g.State != wire.GoalActive {
			return wire.Errorf(wire.CodeGoalInactive, "goal %s is %s; nothing can be approved for it", g.ID, g.State)
		}
		if g.Revision != v.GoalRevision {
			return wire.Errorf(wire.CodeGoalRevisionMismatch,
				"request %s was made under revision %d of goal %s, which is now at revision %d", v.ID, v.GoalRevision, g.ID, g.Revision)
		}
		now := j.now()
		lease = &wire.LeaseView{ID: NewID("l-"), ApprovalID: v.ID, Goal: g.ID, GoalRevision: g.Revision,
			Fingerprint: v.Fingerprint, ExpiresUnix: now.Add(ttl).Unix(), UsesLeft: uses, Profile: v.Identity.Profile}
		if pin != nil {
			if lease.Fingerprint, err = pin(&v.Identity); err != nil {
				return err
			}
		}
		ws := v.Identity.Workspace
		if _, err := tx.ExecContext(ctx, `INSERT INTO leases (id, approval_id, goal, goal_revision, workspace_dev, workspace_ino, workspace_mnt,
			fingerprint, created_unix, expires_unix, uses_granted, uses_left)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM approval_requests WHERE id = ?`,
			lease.ID, v.ID, g.ID, g.Revision, ws.Dev, ws.Ino, ws.MntID, lease.Fingerprint, now.Unix(), lease.ExpiresUnix, uses, uses, v.ID); err != nil {
			return err
		}
		j.crashPoint("approve:in-tx")
		_, err = tx.ExecContext(ctx, `UPDATE approval_requests SET state = 'approved', decided_unix = ? WHERE id = ?`, now.Unix(), v.ID)
		return err
	})
	if err != nil {
		return nil, wrapUnlessCoded("approve", err)
	}
	return lease, nil
}

// Deny decides a pending request by refusing it. No lease exists for it,
// now or later.
func (j *Journal) Deny(ctx context.Context, requestID, reason string) error {
	err := j.tx(ctx, func(tx *sql.Tx) error {
		if _, err := decidable(ctx, tx, requestID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE approval_requests SET state = 'denied', decided_unix = ?, reason = ? WHERE id = ?`,
			j.now().Unix(), reason, requestID)
		return err
	})
	return wrapUnlessCoded("deny", err)
}

// decidable returns request id if it is still pending.
func decidable(ctx context.Context, tx *sql.Tx, id string) (*wire.ApprovalView, error) {
	state, _, reason, err := requestState(ctx, tx, id)
	switch {
	case err != nil:
		return nil, err
	case state == wire.RequestExpired:
		return nil, wire.Errorf(wire.CodeArgumentsInvalid,
			"approval request %s expired because %s; nothing was approved, and submitting the command again asks anew", id, reason)
	case state == wire.RequestDenied:
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "approval request %s is already denied (%s)", id, reason)
	case state != wire.RequestPending:
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "approval request %s is already %s", id, state)
	}
	return readApproval(ctx, tx, id)
}

// Expire ends request id, if it is still pending, because no one will act
// on its decision any more (reason says why: its requester went away). It
// can then be neither approved nor denied, and the next submit of the
// same action asks anew. It reports whether the request expired now.
func (j *Journal) Expire(ctx context.Context, id, reason string) (bool, error) {
	expired := false
	err := j.tx(ctx, func(tx *sql.Tx) error {
		state, _, _, err := requestState(ctx, tx, id)
		if err != nil || state != wire.RequestPending {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approval_expiries (approval_id, reason, expired_unix) VALUES (?, ?, ?)`,
			id, reason, j.now().Unix())
		expired = err == nil
		return err
	})
	return expired, wrapUnlessCoded("expire approval request", err)
}

// ExpirePending expires every pending request for reason and returns
// their ids: at start, a request from before has no requester left.
func (j *Journal) ExpirePending(ctx context.Context, reason string) ([]string, error) {
	var ids []string
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if ids, err = column[string](ctx, tx, `SELECT id FROM approval_requests WHERE state = 'pending'
			AND id NOT IN (SELECT approval_id FROM approval_expiries) ORDER BY rowid`); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO approval_expiries (approval_id, reason, expired_unix)
			SELECT id, ?, ? FROM approval_requests WHERE state = 'pending' AND id NOT IN (SELECT approval_id FROM approval_expiries)`,
			reason, j.now().Unix())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("expire pending approval requests: %w", err)
	}
	return ids, nil
}

// Decision returns the state of request id, the reason it ended and,
// once approved, its lease, for its requester. A denial it returns counts
// as reported to the requester and is marked so: the next submit of the
// same action asks anew.
func (j *Journal) Decision(ctx context.Context, id string) (*wire.ApprovalState, error) {
	d := &wire.ApprovalState{RequestID: id}
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var column string
		var err error
		if d.State, column, d.Reason, err = requestState(ctx, tx, id); err != nil {
			return err
		}
		switch column {
		case "approved":
			return tx.QueryRowContext(ctx, `SELECT id FROM leases WHERE approval_id = ?`, id).Scan(&d.LeaseID)
		case "denied":
			_, err = tx.ExecContext(ctx, `UPDATE approval_requests SET state = 'denial_reported' WHERE id = ?`, id)
		}
		return err
	})
	if err != nil {
		return nil, wrapUnlessCoded("read approval request", err)
	}
	return d, nil
}
