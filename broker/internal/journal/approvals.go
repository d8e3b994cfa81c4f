package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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

// RequestTTL is how long an approval request waits for a decision. It
// survives its requester (a one-shot client, an agent that restarts, a
// second `broker run` of the command finds it and runs under its
// decision) and a broker restart; once RequestTTL has passed since it was
// made, still pending, it expires (expireOverdue): it can be neither
// approved nor denied, and the next submit asks anew.
const RequestTTL = 30 * time.Minute

// overdueReason is why a request expired.
var overdueReason = "no one decided it within " + RequestTTL.String()

// Overdue reports whether a request made at created (unix seconds) and
// still pending has outlived RequestTTL at now: it reads expired, and the
// journal's next write transaction that looks at it expires it.
func Overdue(created int64, now time.Time) bool {
	return created <= liveSince(now)
}

// liveSince is the creation time (unix seconds) after which a request
// still pending at now is within its TTL: every query for the pending
// requests asks `created_unix > liveSince`, so that what is overdue is
// never read as pending, whether or not a write has expired it yet.
func liveSince(now time.Time) int64 { return now.Unix() - int64(RequestTTL/time.Second) }

// expireOverdue expires, in the caller's transaction, every pending
// request that has outlived RequestTTL at now, as of the moment it did.
// Every transaction that reads or decides a request's state calls it
// first.
func (j *Journal) expireOverdue(ctx context.Context, tx *sql.Tx, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO approval_expiries (approval_id, reason, expired_unix)
		SELECT id, ?, created_unix + ? FROM approval_requests
		WHERE state = 'pending' AND expired_unix IS NULL AND created_unix <= ?`, overdueReason, int64(RequestTTL/time.Second), liveSince(now))
	if err != nil {
		return fmt.Errorf("expire overdue approval requests: %w", err)
	}
	return nil
}

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
		now := j.now()
		if err := j.expireOverdue(ctx, tx, now); err != nil {
			return err
		}
		var rid, state, reason string
		err := tx.QueryRowContext(ctx, `SELECT id, state, reason FROM approval_requests
			WHERE goal = ? AND goal_revision = ? AND fingerprint = ? AND state IN ('pending', 'denied') AND expired_unix IS NULL
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
			if view, err = j.readApprovalAt(ctx, tx, rid, now); err != nil {
				return err
			}
			return j.bindCall(ctx, tx, call, "", rid)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		view = &wire.ApprovalView{ID: NewID("ar-"), Goal: g.ID, GoalRevision: g.Revision, Session: session,
			Identity: *id, Fingerprint: fp, Limitations: limitations, CreatedUnix: now.Unix(), State: wire.RequestPending}
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

// Request returns approval request id as it stands. It only reads: a
// request past its TTL that no transaction has expired yet reads
// expired, as it will be.
func (j *Journal) Request(ctx context.Context, id string) (*wire.ApprovalView, error) {
	return j.readApprovalAt(ctx, j.db, id, j.now())
}

// readApprovalAt reads request id as it stands at now (a listing reads
// the clock once).
func (j *Journal) readApprovalAt(ctx context.Context, q querier, id string, now time.Time) (*wire.ApprovalView, error) {
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
	if v.State, _, v.Reason, err = j.requestStateAt(ctx, q, id, now); err != nil {
		return nil, err
	}
	return v, nil
}

// requestStateAt returns the state of request id at now as the wire
// says it, the state column it has in approval_requests, and the reason
// it ended: a denial's, or why it expired (migration 7 keeps expiries
// beside it). A request pending and past its TTL is expired, as
// expireOverdue will record.
func (j *Journal) requestStateAt(ctx context.Context, q querier, id string, now time.Time) (wire.RequestState, string, string, error) {
	var column, reason string
	var expiry sql.NullString
	var created int64
	err := q.QueryRowContext(ctx, `SELECT r.state, r.reason, e.reason, r.created_unix FROM approval_requests r
		LEFT JOIN approval_expiries e ON e.approval_id = r.id WHERE r.id = ?`, id).Scan(&column, &reason, &expiry, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", "", wire.Errorf(wire.CodeArgumentsInvalid, "approval request %q does not exist", id)
	}
	if err != nil {
		return 0, "", "", fmt.Errorf("read approval request %s: %w", id, err)
	}
	switch {
	case expiry.Valid:
		return wire.RequestExpired, column, expiry.String, nil
	case column == "pending" && Overdue(created, now):
		return wire.RequestExpired, column, overdueReason, nil
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
	// both. Read-only, it begins DEFERRED and takes no write lock; what is
	// overdue is listed expired without being written so (liveSince), as
	// a journal opened read-only must. The clock is read once: every
	// request is listed as it stood at now.
	now := j.now()
	since := liveSince(now)
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
		AND expired_unix IS NULL AND created_unix > ? AND `+cond+` ORDER BY created_unix, rowid LIMIT ?`, append(append([]any{since}, args...), limit+1)...)
	// (A contract grant's request is never pending; the ended ones below
	// leave grants out: `broker contracts list` shows them.)
	if err != nil {
		return nil, false, fmt.Errorf("list approvals: %w", err)
	}
	j.crashPoint("approvals:pending-read")
	if truncated = len(ids) > limit; truncated {
		ids = ids[:limit]
	} else {
		ended, err := column[string](ctx, tx, `SELECT id FROM approval_requests
		WHERE (state != 'pending' OR expired_unix IS NOT NULL OR created_unix <= ?1) AND id NOT IN (SELECT approval_id FROM contract_grants)
		ORDER BY COALESCE(expired_unix, decided_unix, created_unix + ?2) DESC, rowid DESC LIMIT ?3`,
			since, int64(RequestTTL/time.Second), min(recentlyEnded, limit-len(ids)))
		if err != nil {
			return nil, false, fmt.Errorf("list approvals: %w", err)
		}
		ids = append(ids, ended...)
	}
	out := make([]wire.ApprovalView, 0, len(ids))
	for _, id := range ids {
		v, err := j.readApprovalAt(ctx, tx, id, now)
		if err != nil {
			return nil, false, err
		}
		out = append(out, *v)
	}
	return out, truncated, nil
}

// lookBack bounds how many of the latest requests RecentRequests reads.
const lookBack = 512

// RecentRequests gives each, newest first, the id and identity of the
// latest lookBack approval requests in any state (a contract grant's own
// decision left out).
func (j *Journal) RecentRequests(ctx context.Context, each func(id string, ident *wire.CommandIdentity)) error {
	rows, err := j.db.QueryContext(ctx, `SELECT id, identity FROM approval_requests
		WHERE id NOT IN (SELECT approval_id FROM contract_grants) ORDER BY created_unix DESC, rowid DESC LIMIT ?`, lookBack)
	if err != nil {
		return fmt.Errorf("read recent approval requests: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var blob []byte
		var ident wire.CommandIdentity
		if err := rows.Scan(&id, &blob); err != nil {
			return fmt.Errorf("read recent approval requests: %w", err)
		}
		if err := wire.DecodeCanonical(blob, &ident); err != nil {
			return fmt.Errorf("decode approval request %s: %w", id, err)
		}
		each(id, &ident)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read recent approval requests: %w", err)
	}
	return nil
}

// Approve decides a pending request by minting a lease bound to its goal
// id and revision, its workspace identity and fingerprint, the request id,
// an expiry ttl from now, and uses. The goal must still be active and at
// the request's revision.
//
// amend, when not nil, is what the operator changed of the request's
// identity: the lease is bound to the fingerprint it returns instead of
// the request's, and an egress list other than the request's is recorded
// with the lease (migration 11), for AmendedLeases.
func (j *Journal) Approve(ctx context.Context, requestID string, uses uint32, ttl time.Duration, amend Amend) (*wire.LeaseView, error) {
	if uses < 1 || uses > MaxLeaseUses {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "uses must be between 1 and %d, not %d", MaxLeaseUses, uses)
	}
	if ttl < time.Second || ttl > MaxLeaseTTL {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "the lease lifetime must be between 1s and %s, not %s", MaxLeaseTTL, ttl)
	}
	var lease *wire.LeaseView
	err := j.tx(ctx, func(tx *sql.Tx) error {
		v, g, err := j.approvable(ctx, tx, requestID)
		if err != nil {
			return err
		}
		now := j.now()
		lease = &wire.LeaseView{ID: NewID("l-"), ApprovalID: v.ID, Goal: g.ID, GoalRevision: g.Revision,
			Fingerprint: v.Fingerprint, ExpiresUnix: now.Add(ttl).Unix(), UsesLeft: uses, Profile: v.Identity.Profile}
		granted := &v.Identity
		if amend != nil {
			if granted, lease.Fingerprint, err = amend(&v.Identity); err != nil {
				return err
			}
		}
		lease.Egress = granted.Egress
		if err := insertLease(ctx, tx, lease, v.Identity.Workspace, now, uses); err != nil {
			return err
		}
		if !slices.Equal(granted.Egress, v.Identity.Egress) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO lease_egress (lease_id, egress) VALUES (?, ?)`,
				lease.ID, egressColumn(granted.Egress)); err != nil {
				return err
			}
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

// Amend is how an approval changes the identity its request bound (the
// operator pinned another executable binding, or set the egress list):
// it returns the identity the lease grants and its fingerprint, and
// leaves the request's as it is.
type Amend func(*wire.CommandIdentity) (*wire.CommandIdentity, []byte, error)

// insertLease records lease l (its id, request, goal and revision,
// fingerprint and expiry) bound to workspace ws, granted at now with uses.
func insertLease(ctx context.Context, tx *sql.Tx, l *wire.LeaseView, ws wire.DirIdentity, now time.Time, uses uint32) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO leases (id, approval_id, goal, goal_revision, workspace_dev, workspace_ino, workspace_mnt,
		fingerprint, created_unix, expires_unix, uses_granted, uses_left) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.ID, l.ApprovalID, l.Goal, l.GoalRevision, ws.Dev, ws.Ino, ws.MntID, l.Fingerprint, now.Unix(), l.ExpiresUnix, uses, uses)
	return err
}

// Deny decides a pending request by refusing it. No lease exists for it,
// now or later.
func (j *Journal) Deny(ctx context.Context, requestID, reason string) error {
	err := j.tx(ctx, func(tx *sql.Tx) error {
		if _, err := j.decidable(ctx, tx, requestID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE approval_requests SET state = 'denied', decided_unix = ?, reason = ? WHERE id = ?`,
			j.now().Unix(), reason, requestID)
		return err
	})
	return wrapUnlessCoded("deny", err)
}

// decidable returns request id if it is still pending, once what is
// overdue has expired.
func (j *Journal) decidable(ctx context.Context, tx *sql.Tx, id string) (*wire.ApprovalView, error) {
	now := j.now()
	if err := j.expireOverdue(ctx, tx, now); err != nil {
		return nil, err
	}
	return j.pendingAt(ctx, tx, id, now)
}

// pendingAt returns request id if it is pending at now, what is overdue
// having been expired as of now.
func (j *Journal) pendingAt(ctx context.Context, tx *sql.Tx, id string, now time.Time) (*wire.ApprovalView, error) {
	state, _, reason, err := j.requestStateAt(ctx, tx, id, now)
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
	return j.readApprovalAt(ctx, tx, id, now)
}

// approvable returns request id if it may be approved now: decidable,
// and its goal active and still at the request's revision.
func (j *Journal) approvable(ctx context.Context, tx *sql.Tx, id string) (*wire.ApprovalView, Goal, error) {
	now := j.now()
	if err := j.expireOverdue(ctx, tx, now); err != nil {
		return nil, Goal{}, err
	}
	return j.approvableAt(ctx, tx, id, now)
}

// approvableAt is approvable at now, what is overdue having been
// expired as of now.
func (j *Journal) approvableAt(ctx context.Context, tx *sql.Tx, id string, now time.Time) (*wire.ApprovalView, Goal, error) {
	v, err := j.pendingAt(ctx, tx, id, now)
	if err != nil {
		return nil, Goal{}, err
	}
	g, err := readGoal(ctx, tx, v.Goal)
	switch {
	case err != nil:
		return nil, Goal{}, err
	case g.State != wire.GoalActive:
		return nil, Goal{}, wire.Errorf(wire.CodeGoalInactive, "goal %s is %s; nothing can be approved for it", g.ID, g.State)
	case g.Revision != v.GoalRevision:
		return nil, Goal{}, wire.Errorf(wire.CodeGoalRevisionMismatch,
			"request %s was made under revision %d of goal %s, which is now at revision %d", v.ID, v.GoalRevision, g.ID, g.Revision)
	}
	return v, g, nil
}

// Decision returns the state of request id, the reason it ended and,
// once approved, its lease (the contract grant that covers it, when one
// settled it), for its requester. A denial it returns counts as reported
// to the requester and is marked so: the next submit of the same action
// asks anew.
func (j *Journal) Decision(ctx context.Context, id string) (*wire.ApprovalState, error) {
	d := &wire.ApprovalState{RequestID: id}
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var column string
		now := j.now()
		err := j.expireOverdue(ctx, tx, now)
		if err != nil {
			return err
		}
		if d.State, column, d.Reason, err = j.requestStateAt(ctx, tx, id, now); err != nil {
			return err
		}
		switch column {
		case "approved":
			return tx.QueryRowContext(ctx, `SELECT id FROM leases WHERE approval_id = ?
				UNION ALL SELECT lease_id FROM approval_covers WHERE approval_id = ?`, id, id).Scan(&d.LeaseID)
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
