package journal

import (
	"context"
	"database/sql"
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
func (j *Journal) EnableContract(ctx context.Context, name, digest string, base []byte, id *wire.CommandIdentity,
	uses uint32, ttl time.Duration) (*wire.LeaseView, error) {
	if uses < 1 || uses > MaxLeaseUses {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "uses must be between 1 and %d, not %d", MaxLeaseUses, uses)
	}
	if ttl < time.Second || ttl > MaxLeaseTTL {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "the grant's lifetime must be between 1s and %s, not %s", MaxLeaseTTL, ttl)
	}
	blob, err := wire.Canonical(id)
	if err != nil {
		return nil, fmt.Errorf("enable contract: %w", err)
	}
	now := j.now()
	v := &wire.LeaseView{ID: NewID("l-"), ApprovalID: NewID("ar-"), Goal: DefaultGoal, Fingerprint: base,
		ExpiresUnix: now.Add(ttl).Unix(), UsesLeft: uses, Executable: id.Executable.Requested, Profile: id.Profile, Contract: name}
	err = j.tx(ctx, func(tx *sql.Tx) error {
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
		ws := id.Workspace
		if _, err := tx.ExecContext(ctx, `INSERT INTO leases (id, approval_id, goal, goal_revision, workspace_dev, workspace_ino, workspace_mnt,
			fingerprint, created_unix, expires_unix, uses_granted, uses_left) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			v.ID, v.ApprovalID, g.ID, g.Revision, ws.Dev, ws.Ino, ws.MntID, base, now.Unix(), v.ExpiresUnix, uses, uses); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO contract_grants (lease_id, approval_id, contract, digest, created_unix) VALUES (?, ?, ?, ?, ?)`,
			v.ID, v.ApprovalID, name, digest, now.Unix())
		return err
	})
	if err != nil {
		return nil, wrapUnlessCoded("enable contract", err)
	}
	return v, nil
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

// ContractGrants lists contract grants, newest first, at most limit of
// them after the grant after (see page), each with its contract's name.
func (j *Journal) ContractGrants(ctx context.Context, after string, limit int) ([]wire.LeaseView, error) {
	return j.leases(ctx, true, after, limit)
}
