package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"warrant/wire"
)

// Lease is a matched lease: enough to checkpoint an action under it. Only
// MatchLease makes one.
type Lease struct {
	id, approvalID string
	goal           string
	revision       uint64
	fingerprint    []byte
	usesLeft       uint32 // set by Checkpoint
	// contract and parse are set for a contract grant (UnderContract):
	// the contract's name and the parse of the action's argv.
	contract string
	parse    []byte
	// checkpointed is the record of the action the last Checkpoint under
	// this lease wrote (Checkpointed).
	checkpointed *Record
}

// ID is the lease id.
func (l *Lease) ID() string { return l.id }

// Fingerprint is the fingerprint the lease is bound to.
func (l *Lease) Fingerprint() []byte { return l.fingerprint }

// Contract is the name of the contract whose grant this is, "" for a
// lease an exact approval granted.
func (l *Lease) Contract() string { return l.contract }

// UsesLeft is what the lease had left right after the Checkpoint that
// consumed a use of it.
func (l *Lease) UsesLeft() uint32 { return l.usesLeft }

// Checkpointed is the record of the action that the last Checkpoint under
// this lease wrote, as Record would read it back then (its only event is
// EXECUTING), but for its identity, which is the one Checkpoint was given:
// equal under the canonical encoding, where a nil list reads back empty.
// The broker builds the receipt of an action it observed from it rather
// than read it back; a broker that did not make the checkpoint reads the
// journal. It is nil before a Checkpoint, after one that failed, and
// where the lease's approval request is missing (Record names that).
func (l *Lease) Checkpointed() *Record { return l.checkpointed }

// MatchLease returns a usable lease for exactly this goal revision,
// workspace and fingerprint, or nil when there is none. Matching is byte
// equality of the fingerprint (which covers the whole identity) plus the
// goal id, its current revision and the workspace identity: there are no
// wildcards, prefixes or folders. Revoked, expired and exhausted leases
// never match. When several match, the one expiring first is used.
func (j *Journal) MatchLease(ctx context.Context, g Goal, ws wire.DirIdentity, fp []byte) (*Lease, error) {
	l := &Lease{goal: g.ID, revision: g.Revision, fingerprint: fp}
	err := j.db.QueryRowContext(ctx, `SELECT id, approval_id FROM leases
		WHERE goal = ? AND goal_revision = ? AND fingerprint = ?
		  AND workspace_dev = ? AND workspace_ino = ? AND workspace_mnt = ?
		  AND revoked_unix IS NULL AND uses_left > 0 AND expires_unix > ?
		  AND id NOT IN (SELECT lease_id FROM contract_grants)
		ORDER BY expires_unix, rowid LIMIT 1`,
		g.ID, g.Revision, fp, ws.Dev, ws.Ino, ws.MntID, j.now().Unix()).Scan(&l.id, &l.approvalID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("match lease: %w", err)
	}
	return l, nil
}

// Amended is a lease the operator granted with another egress list than
// its request asked for, and that list.
type Amended struct {
	Lease  *Lease
	Egress []string // nil: none
}

// maxAmended bounds the leases AmendedLeases returns.
const maxAmended = 16

// AmendedLeases returns the usable leases for this goal revision and
// workspace granted for an approved request of fingerprint fp with
// another egress list than the request's (`broker approve --egress`),
// expiring first first, at most maxAmended. The lease's fingerprint is
// not fp but that of the request's identity with the list: the caller
// rebuilds the identity it resolved with the list and uses a lease only
// if the rebuilt fingerprint is the lease's, so that a submit uses the
// amended lease exactly when it is the command that was approved.
func (j *Journal) AmendedLeases(ctx context.Context, g Goal, ws wire.DirIdentity, fp []byte) ([]Amended, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT l.id, l.approval_id, l.fingerprint, e.egress FROM leases l
		JOIN lease_egress e ON e.lease_id = l.id JOIN approval_requests a ON a.id = l.approval_id
		WHERE l.goal = ? AND l.goal_revision = ? AND a.fingerprint = ?
		  AND l.workspace_dev = ? AND l.workspace_ino = ? AND l.workspace_mnt = ?
		  AND l.revoked_unix IS NULL AND l.uses_left > 0 AND l.expires_unix > ?
		ORDER BY l.expires_unix, l.rowid LIMIT ?`,
		g.ID, g.Revision, fp, ws.Dev, ws.Ino, ws.MntID, j.now().Unix(), maxAmended)
	if err != nil {
		return nil, fmt.Errorf("match amended leases: %w", err)
	}
	defer rows.Close()
	var out []Amended
	for rows.Next() {
		l := &Lease{goal: g.ID, revision: g.Revision}
		var egress string
		if err := rows.Scan(&l.id, &l.approvalID, &l.fingerprint, &egress); err != nil {
			return nil, fmt.Errorf("match amended leases: %w", err)
		}
		out = append(out, Amended{Lease: l, Egress: egressList(egress)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("match amended leases: %w", err)
	}
	return out, nil
}

// Revoke ends a lease now. Revoking twice is an error, so the operator
// learns the lease was already gone.
func (j *Journal) Revoke(ctx context.Context, leaseID string) error {
	res, err := j.db.ExecContext(ctx, `UPDATE leases SET revoked_unix = ?, revoked_reason = 'revoked by the operator'
		WHERE id = ? AND revoked_unix IS NULL`, j.now().Unix(), leaseID)
	if err != nil {
		return fmt.Errorf("revoke lease: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return wire.Errorf(wire.CodeArgumentsInvalid, "lease %q does not exist or is already revoked", leaseID)
	}
	return nil
}

// Leases lists leases, newest first, at most limit of them after the
// lease after (see page), each with the command its approval request
// bound. Contract grants are listed by ContractGrants, not here.
// identities, when not nil, receives the identity each listed lease's
// approval bound, in the listing's order: from it the broker judges, once
// the rows are closed, whether a lease can still match
// (wire.LeaseView.WillNotMatch), work that may touch the file system and
// must not hold the journal's only connection.
func (j *Journal) Leases(ctx context.Context, after string, limit int, identities *[]*wire.CommandIdentity) ([]wire.LeaseView, error) {
	return j.listLeases(ctx, false, after, limit, identities)
}

// listLeases lists the leases (grants false) or the contract grants
// (true), as Leases and ContractGrants say.
func (j *Journal) listLeases(ctx context.Context, grants bool, after string, limit int, identities *[]*wire.CommandIdentity) ([]wire.LeaseView, error) {
	cond, args, err := page(ctx, j.db, "leases", "id", after, true)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	which := "NOT IN"
	if grants {
		which = "IN"
	}
	rows, err := j.db.QueryContext(ctx, `SELECT id, approval_id, goal, goal_revision, fingerprint, expires_unix, uses_left,
		revoked_unix IS NOT NULL, (SELECT a.identity FROM approval_requests a WHERE a.id = leases.approval_id),
		COALESCE((SELECT c.contract FROM contract_grants c WHERE c.lease_id = leases.id), ''),
		(SELECT e.egress FROM lease_egress e WHERE e.lease_id = leases.id)
		FROM leases WHERE id `+which+` (SELECT lease_id FROM contract_grants) AND `+cond+`
		ORDER BY created_unix DESC, rowid DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer rows.Close()
	var out []wire.LeaseView
	for rows.Next() {
		var v wire.LeaseView
		var idBlob []byte
		var amended sql.NullString // the operator's egress list, when not the request's
		if err := rows.Scan(&v.ID, &v.ApprovalID, &v.Goal, &v.GoalRevision, &v.Fingerprint, &v.ExpiresUnix, &v.UsesLeft, &v.Revoked, &idBlob, &v.Contract,
			&amended); err != nil {
			return nil, fmt.Errorf("list leases: %w", err)
		}
		id, err := decodeIdentity(idBlob)
		if err != nil {
			return nil, fmt.Errorf("list leases: %s: %w", v.ID, err)
		}
		v.Executable, v.Argv, v.ArgvTruncated, v.Profile = listed(id)
		v.Egress = id.Egress
		if amended.Valid {
			v.Egress = egressList(amended.String)
		}
		if identities != nil {
			*identities = append(*identities, id)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return out, nil
}

// listed is the command an identity binds, as a listing carries it
// (wire.ListedArgv), and its profile.
func listed(id *wire.CommandIdentity) (exe string, argv []string, truncated bool, p wire.Profile) {
	argv, truncated = wire.ListedArgv(id.Argv)
	return id.Executable.Requested, argv, truncated, id.Profile
}

// decodeIdentity decodes an identity as the journal stores it.
func decodeIdentity(identity []byte) (*wire.CommandIdentity, error) {
	var id wire.CommandIdentity
	if err := wire.DecodeCanonical(identity, &id); err != nil {
		return nil, fmt.Errorf("decode identity: %w", err)
	}
	return &id, nil
}

// usable is what leaseUsable read: the lease's uses left, and its
// approval request's creation and decision (NULL where there is none),
// for the action's record.
type usable struct {
	left               uint32
	requested, decided sql.NullInt64
}

// leaseUsable re-checks, inside the checkpoint transaction, everything
// that may have changed since MatchLease: revocation, expiry, remaining
// uses, and the goal's state and revision.
func (j *Journal) leaseUsable(ctx context.Context, tx *sql.Tx, l *Lease) (u usable, err error) {
	var expires int64
	var revoked sql.NullInt64
	var reason string
	err = tx.QueryRowContext(ctx, `SELECT l.expires_unix, l.uses_left, l.revoked_unix, l.revoked_reason, r.created_unix, r.decided_unix
		FROM leases l LEFT JOIN approval_requests r ON r.id = ? WHERE l.id = ?`, l.approvalID, l.id).
		Scan(&expires, &u.left, &revoked, &reason, &u.requested, &u.decided)
	if errors.Is(err, sql.ErrNoRows) {
		return usable{}, wire.Errorf(wire.CodeApprovalRequired, "lease %s does not exist; the action needs an approval", l.id)
	}
	if err != nil {
		return usable{}, err
	}
	g, err := readGoal(ctx, tx, l.goal)
	if err != nil {
		return usable{}, err
	}
	switch {
	case g.State != wire.GoalActive:
		err = wire.Errorf(wire.CodeGoalInactive, "goal %s is %s; its leases cannot be used", g.ID, g.State)
	case g.Revision != l.revision:
		err = wire.Errorf(wire.CodeGoalRevisionMismatch, "lease %s was granted under revision %d of goal %s, which is now at revision %d",
			l.id, l.revision, g.ID, g.Revision)
	case revoked.Valid:
		err = wire.Errorf(wire.CodeLeaseRevoked, "lease %s was revoked (%s)", l.id, reason)
	case expires <= j.now().Unix():
		err = wire.Errorf(wire.CodeLeaseExpired, "lease %s expired", l.id)
	case u.left == 0:
		err = wire.Errorf(wire.CodeLeaseExhausted, "lease %s has no uses left", l.id)
	}
	if err != nil {
		return usable{}, err
	}
	return u, nil
}

// egressColumn is an egress list as lease_egress keeps it: the entries
// separated by spaces, which no entry holds; egressList reads it back.
func egressColumn(entries []string) string { return strings.Join(entries, " ") }

func egressList(column string) []string {
	if column == "" {
		return nil
	}
	return strings.Split(column, " ")
}
