package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"warrant/wire"
)

// ContractGrant is a live contract grant of one workspace, as a submit
// matches it: the contract's name and digest and the base it binds.
type ContractGrant struct {
	ID, approvalID   string
	Contract, Digest string
	Base             []byte
}

// EnableContract records the operator's grant of contract name (digest)
// for base, the BaseFingerprint of id (the identity of the contract's
// executable without argv and cwd), with uses and an expiry ttl from
// now. The grant is a lease row (uses, expiry, revocation, workspace)
// with an approval request row decided at once, under the default goal:
// a grant is not bound to a goal; each action it admits is recorded
// under its own goal, which must be active.
//
// request, when not "", is the pending approval request the grant
// settles (id is its identity, and the caller checked that the contract
// accepts its argv): in the same transaction it must still be approvable
// (pending, its goal active at its revision), and it is approved,
// covered by the grant (approval_covers), which Decision then answers as
// its lease. So are the oldest other live pending requests that admits
// says the grant admits (admitted) and that are still approvable, up to
// the grant's uses in all: each settled request runs once under it when
// submitted again, so a grant never approves more than it can run. The
// grant's Settled counts them, request included; pending is how many
// more it admits that stay pending.
func (j *Journal) EnableContract(ctx context.Context, name, digest string, base []byte, id *wire.CommandIdentity,
	uses uint32, ttl time.Duration, request string, admits func(*wire.CommandIdentity) bool) (_ *wire.LeaseView, pending uint32, _ error) {
	if uses < 1 || uses > MaxLeaseUses {
		return nil, 0, wire.Errorf(wire.CodeArgumentsInvalid, "uses must be between 1 and %d, not %d", MaxLeaseUses, uses)
	}
	if ttl < time.Second || ttl > MaxLeaseTTL {
		return nil, 0, wire.Errorf(wire.CodeArgumentsInvalid, "the grant's lifetime must be between 1s and %s, not %s", MaxLeaseTTL, ttl)
	}
	blob, err := wire.Canonical(id)
	if err != nil {
		return nil, 0, fmt.Errorf("enable contract: %w", err)
	}
	var others []candidate
	if request != "" && admits != nil {
		if others, err = j.admitted(ctx, request, admits); err != nil {
			return nil, 0, fmt.Errorf("enable contract: %w", err)
		}
	}
	now := j.now()
	v := &wire.LeaseView{ID: NewID("l-"), ApprovalID: NewID("ar-"), Goal: DefaultGoal, Fingerprint: base,
		ExpiresUnix: now.Add(ttl).Unix(), UsesLeft: uses, Executable: id.Executable.Requested, Profile: id.Profile, Contract: name}
	err = j.tx(ctx, func(tx *sql.Tx) error {
		if request != "" {
			if err := j.expireOverdue(ctx, tx, now); err != nil {
				return err
			}
			if _, _, err := j.approvableAt(ctx, tx, request, now); err != nil {
				return err
			}
		}
		g, err := readGoal(ctx, tx, DefaultGoal)
		if err != nil {
			return err
		}
		v.GoalRevision = g.Revision
		if _, err := tx.ExecContext(ctx, `INSERT INTO approval_requests
			(id, goal, goal_revision, session, fingerprint, identity, limitations, created_unix, state, decided_unix, reason)
			VALUES (?, ?, ?, '', ?, ?, '', ?, 'approved', ?, ?)`,
			v.ApprovalID, g.ID, g.Revision, base, blob, now.Unix(), now.Unix(), "contract "+name+" enabled by the operator"); err != nil {
			return err
		}
		if err := insertLease(ctx, tx, v, id.Workspace, now, uses); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO contract_grants (lease_id, approval_id, contract, digest, created_unix) VALUES (?, ?, ?, ?, ?)`,
			v.ID, v.ApprovalID, name, digest, now.Unix()); err != nil || request == "" {
			return err
		}
		settle := []string{request}
		pending = 0
		for _, c := range others {
			switch ok, err := j.stillAdmitted(ctx, tx, c, now); {
			case err != nil:
				return err
			case !ok:
			case len(settle) < int(uses):
				settle = append(settle, c.id)
			default:
				pending++
			}
		}
		for _, rid := range settle {
			if _, err := tx.ExecContext(ctx, `UPDATE approval_requests SET state = 'approved', decided_unix = ? WHERE id = ?`, now.Unix(), rid); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO approval_covers (approval_id, lease_id, created_unix) VALUES (?, ?, ?)`, rid, v.ID, now.Unix()); err != nil {
				return err
			}
		}
		v.Settled = uint32(len(settle))
		return nil
	})
	if err != nil {
		return nil, 0, wrapUnlessCoded("enable contract", err)
	}
	return v, pending, nil
}

// candidate is a pending request a grant admits, with the identity
// (canonical CBOR) it was matched as.
type candidate struct {
	id       string
	identity []byte
}

// admitted lists the live pending requests other than request, oldest
// first and at most lookBack of them, that admits says a grant admits.
// It runs before the grant's transaction, outside any: admits may match
// on the filesystem, and the journal's write lock is not held meanwhile.
// What it lists is checked again in the transaction (stillAdmitted).
func (j *Journal) admitted(ctx context.Context, request string, admits func(*wire.CommandIdentity) bool) ([]candidate, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT id, identity FROM approval_requests
		WHERE state = 'pending' AND expired_unix IS NULL AND created_unix > ? AND id != ?
		ORDER BY created_unix, rowid LIMIT ?`, liveSince(j.now()), request, lookBack)
	if err != nil {
		return nil, err
	}
	var read []candidate // all read before admits is asked: the single connection is free meanwhile
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.id, &c.identity); err != nil {
			rows.Close()
			return nil, err
		}
		read = append(read, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := read[:0]
	for _, c := range read {
		id, err := decodeIdentity(c.identity)
		if err != nil {
			return nil, fmt.Errorf("approval request %s: %w", c.id, err)
		}
		if admits(id) {
			out = append(out, c)
		}
	}
	return out, nil
}

// stillAdmitted reports, in the grant's transaction (what is overdue at
// now expired), whether candidate c may still be settled: approvable,
// and of the identity it was matched as. A request decided, expired or
// whose goal moved on since admitted read it is left as it is.
func (j *Journal) stillAdmitted(ctx context.Context, tx *sql.Tx, c candidate, now time.Time) (bool, error) {
	var we *wire.Error
	switch _, _, err := j.approvableAt(ctx, tx, c.id, now); {
	case errors.As(err, &we):
		return false, nil
	case err != nil:
		return false, err
	}
	var same bool
	err := tx.QueryRowContext(ctx, `SELECT identity = ? FROM approval_requests WHERE id = ?`, c.identity, c.id).Scan(&same)
	return same, err
}

// LiveContractGrants lists the usable contract grants of workspace ws
// (not revoked, expired or used up), the one expiring first first.
func (j *Journal) LiveContractGrants(ctx context.Context, ws wire.DirIdentity) ([]ContractGrant, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT l.id, l.approval_id, c.contract, c.digest, l.fingerprint
		FROM leases l JOIN contract_grants c ON c.lease_id = l.id
		WHERE l.workspace_dev = ? AND l.workspace_ino = ? AND l.workspace_mnt = ?
		  AND l.revoked_unix IS NULL AND l.uses_left > 0 AND l.expires_unix > ?
		ORDER BY l.expires_unix, l.rowid`, ws.Dev, ws.Ino, ws.MntID, j.now().Unix())
	if err != nil {
		return nil, fmt.Errorf("list contract grants: %w", err)
	}
	defer rows.Close()
	var out []ContractGrant
	for rows.Next() {
		var g ContractGrant
		if err := rows.Scan(&g.ID, &g.approvalID, &g.Contract, &g.Digest, &g.Base); err != nil {
			return nil, fmt.Errorf("list contract grants: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list contract grants: %w", err)
	}
	return out, nil
}

// UnderContract is the Lease by which Checkpoint runs an action that
// grant c admitted under goal g: a use of the grant is consumed exactly
// as a lease's, and the action is recorded under g with fp, its own
// fingerprint, and parse (canonical CBOR), the contract's parse of its argv.
func UnderContract(c *ContractGrant, g Goal, fp, parse []byte) *Lease {
	return &Lease{id: c.ID, approvalID: c.approvalID, goal: g.ID, revision: g.Revision, fingerprint: fp,
		contract: c.Contract, parse: parse}
}

// RevokeContract ends contract grant id now, as Revoke ends a lease; a
// lease that is not a contract grant is refused and stays as it is.
func (j *Journal) RevokeContract(ctx context.Context, id string) error {
	var grant, lease bool
	err := j.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM contract_grants WHERE lease_id = ?), EXISTS (SELECT 1 FROM leases WHERE id = ?)`,
		id, id).Scan(&grant, &lease)
	switch {
	case err != nil:
		return fmt.Errorf("revoke contract grant: %w", err)
	case lease && !grant:
		return wire.Errorf(wire.CodeArgumentsInvalid, "%s is a lease, not a contract grant; nothing was revoked (`broker revoke %s` ends a lease)", id, id)
	case !grant:
		return wire.Errorf(wire.CodeArgumentsInvalid, "contract grant %q does not exist (`broker contracts list` shows the usable ones)", id)
	}
	return j.Revoke(ctx, id) // a grant stays one: the row checked is never changed
}

// ContractGrants lists contract grants, newest first, at most limit of
// them after the grant after (see page), each with its contract's name.
func (j *Journal) ContractGrants(ctx context.Context, after string, limit int) ([]wire.LeaseView, error) {
	return j.listLeases(ctx, true, after, limit, nil)
}
