package journal

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are applied in order, each in its own transaction; the
// journal's schema version is the number applied. A migration is never
// edited once released: changes are new entries.
var migrations = []string{
	// 1: the initial schema.
	`
CREATE TABLE goals (
	id           TEXT PRIMARY KEY,
	title        TEXT NOT NULL,
	revision     INTEGER NOT NULL CHECK (revision >= 1),
	state        TEXT NOT NULL CHECK (state IN ('active', 'paused', 'cancelled')),
	created_unix INTEGER NOT NULL
);
INSERT INTO goals (id, title, revision, state, created_unix)
	VALUES ('default', 'actions submitted without a goal', 1, 'active', 0);
CREATE TRIGGER goals_revision_monotonic BEFORE UPDATE OF revision ON goals
	WHEN NEW.revision < OLD.revision
	BEGIN SELECT RAISE(ABORT, 'goal revisions never decrease'); END;
CREATE TRIGGER goals_cancel_final BEFORE UPDATE OF state ON goals
	WHEN OLD.state = 'cancelled' AND NEW.state != 'cancelled'
	BEGIN SELECT RAISE(ABORT, 'a cancelled goal stays cancelled'); END;

CREATE TABLE approval_requests (
	id            TEXT PRIMARY KEY,
	goal          TEXT NOT NULL REFERENCES goals(id),
	goal_revision INTEGER NOT NULL,
	session       TEXT NOT NULL,
	fingerprint   BLOB NOT NULL,
	identity      BLOB NOT NULL,
	limitations   TEXT NOT NULL,
	created_unix  INTEGER NOT NULL,
	state         TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'denial_reported')),
	decided_unix  INTEGER,
	reason        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX approval_requests_lookup ON approval_requests (goal, goal_revision, fingerprint, state);

CREATE TABLE leases (
	id             TEXT PRIMARY KEY,
	approval_id    TEXT NOT NULL UNIQUE REFERENCES approval_requests(id),
	goal           TEXT NOT NULL REFERENCES goals(id),
	goal_revision  INTEGER NOT NULL,
	workspace_dev  INTEGER NOT NULL,
	workspace_ino  INTEGER NOT NULL,
	workspace_mnt  INTEGER NOT NULL,
	fingerprint    BLOB NOT NULL,
	created_unix   INTEGER NOT NULL,
	expires_unix   INTEGER NOT NULL,
	uses_granted   INTEGER NOT NULL CHECK (uses_granted >= 1),
	uses_left      INTEGER NOT NULL CHECK (uses_left >= 0 AND uses_left <= uses_granted),
	revoked_unix   INTEGER,
	revoked_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX leases_lookup ON leases (goal, fingerprint);
CREATE TRIGGER leases_uses_monotonic BEFORE UPDATE OF uses_left ON leases
	WHEN NEW.uses_left > OLD.uses_left
	BEGIN SELECT RAISE(ABORT, 'lease uses are never refunded'); END;
CREATE TRIGGER leases_revoke_final BEFORE UPDATE OF revoked_unix ON leases
	WHEN OLD.revoked_unix IS NOT NULL
	BEGIN SELECT RAISE(ABORT, 'a revoked lease stays revoked'); END;

CREATE TABLE actions (
	handle         TEXT PRIMARY KEY,
	lease_id       TEXT NOT NULL REFERENCES leases(id),
	approval_id    TEXT NOT NULL REFERENCES approval_requests(id),
	goal           TEXT NOT NULL REFERENCES goals(id),
	goal_revision  INTEGER NOT NULL,
	session        TEXT NOT NULL,
	executable     TEXT NOT NULL,
	fingerprint    BLOB NOT NULL,
	identity       BLOB NOT NULL,
	state          TEXT NOT NULL CHECK (state IN ('executing', 'running', 'terminal', 'unknown')),
	outcome        TEXT NOT NULL DEFAULT '',
	result         BLOB,
	classification TEXT NOT NULL DEFAULT '',
	note           TEXT NOT NULL DEFAULT '',
	created_unix   INTEGER NOT NULL,
	updated_unix   INTEGER NOT NULL
);
CREATE INDEX actions_state ON actions (state);
CREATE TRIGGER actions_final BEFORE UPDATE OF state ON actions
	WHEN OLD.state IN ('terminal', 'unknown') AND NEW.state != OLD.state
	BEGIN SELECT RAISE(ABORT, 'a finished or unknown action never changes state'); END;

CREATE TABLE action_events (
	handle     TEXT NOT NULL REFERENCES actions(handle),
	seq        INTEGER NOT NULL,
	kind       TEXT NOT NULL,
	at_unix_ns INTEGER NOT NULL,
	detail     TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (handle, seq)
);

CREATE TABLE receipts (
	id           TEXT PRIMARY KEY,
	handle       TEXT NOT NULL REFERENCES actions(handle),
	seq          INTEGER NOT NULL UNIQUE,
	body         BLOB NOT NULL,
	digest       BLOB NOT NULL,
	prev_digest  BLOB,
	created_unix INTEGER NOT NULL
);
`,
	// 2: the receipt log (receipt_log, receipt_checkpoints) and each
	// action's receipt id. The receipts table of migration 1 was never
	// written by any broker; its NOT NULL body could not hold a pruned
	// entry, so it is replaced.
	`
DROP TABLE receipts;
CREATE TABLE receipt_log (
	idx          INTEGER PRIMARY KEY CHECK (idx >= 0),
	receipt_id   TEXT UNIQUE,                      -- NULL for a deletion record
	handle       TEXT UNIQUE REFERENCES actions(handle), -- NULL for a deletion record
	envelope     BLOB NOT NULL,                    -- the signed DSSE envelope
	body         BLOB,                             -- retained redacted output; NULL once pruned
	created_unix INTEGER NOT NULL
);
CREATE TABLE receipt_checkpoints (
	seq          INTEGER PRIMARY KEY,
	size         INTEGER NOT NULL,
	note         BLOB NOT NULL,                    -- signed note over the tree of the first size entries
	created_unix INTEGER NOT NULL
);
ALTER TABLE actions ADD COLUMN receipt_id TEXT NOT NULL DEFAULT '';
`,
	// 3: capability reports (broker/probe.go). Append-only; the last row
	// is the current report.
	`
CREATE TABLE capability_reports (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	binding      TEXT NOT NULL,                    -- hex SHA-256 of the report's binding
	state        TEXT NOT NULL CHECK (state IN ('unverified', 'verified', 'unavailable')),
	report       TEXT NOT NULL,                    -- the whole report as JSON, with every check's evidence
	created_unix INTEGER NOT NULL
);
CREATE TRIGGER capability_reports_append_only BEFORE UPDATE ON capability_reports
	BEGIN SELECT RAISE(ABORT, 'capability reports are never changed'); END;
`,
	// 4: each action's origin, its first process as recorded at launch
	// (RecordOrigin), by which a later broker finds its survivors when
	// there was no cgroup. Written once, never changed.
	`
CREATE TABLE action_origins (
	handle      TEXT PRIMARY KEY REFERENCES actions(handle),
	pid         INTEGER NOT NULL CHECK (pid > 0),
	start_ticks INTEGER NOT NULL CHECK (start_ticks >= 0),  -- clock ticks after boot
	boot_id     TEXT NOT NULL
);
CREATE TRIGGER action_origins_final BEFORE UPDATE ON action_origins
	BEGIN SELECT RAISE(ABORT, 'an action''s origin is never changed'); END;
`,
	// 5: witness reports (broker/internal/witness): where `serve --witness`
	// copies checkpoints, and whether its last write failed. The last row
	// is the current state.
	`
CREATE TABLE witness_reports (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	path         TEXT NOT NULL,                    -- the witness file
	size         INTEGER NOT NULL,                 -- the log size of the checkpoint last written, or tried
	error        TEXT NOT NULL,                    -- '' when that write succeeded
	created_unix INTEGER NOT NULL
);
`,
	// 6: submit call ids (calls.go). A row binds a session's call id to
	// the request it carried and to what it started: the approval request
	// it raised, then the action. It is written in the transaction that
	// records the approval request or the action, so no crash leaves an
	// action whose call id a retry could miss. Once a row names an action
	// it never changes, and no row is ever deleted.
	`
CREATE TABLE submit_calls (
	session      TEXT NOT NULL,                    -- '' for submits without a session
	call_id      TEXT NOT NULL,
	request      BLOB NOT NULL,                    -- the submit without its call id, canonical CBOR
	approval_id  TEXT REFERENCES approval_requests(id),
	handle       TEXT UNIQUE REFERENCES actions(handle) DEFERRABLE INITIALLY DEFERRED,
	created_unix INTEGER NOT NULL,
	PRIMARY KEY (session, call_id),
	CHECK (approval_id IS NOT NULL OR handle IS NOT NULL)
);
CREATE TRIGGER submit_calls_bound BEFORE UPDATE ON submit_calls
	WHEN OLD.handle IS NOT NULL OR NEW.request != OLD.request OR NEW.session != OLD.session OR NEW.call_id != OLD.call_id
	BEGIN SELECT RAISE(ABORT, 'a call id keeps its request, and the action it started'); END;
CREATE TRIGGER submit_calls_kept BEFORE DELETE ON submit_calls
	BEGIN SELECT RAISE(ABORT, 'call ids are never forgotten'); END;
`,
	// 7: approval requests that expired while pending (their requester
	// went away, then; since 10, their TTL passed). SQLite cannot change the CHECK of
	// approval_requests.state, and rebuilding that table would mean
	// dropping it under the leases and actions that reference it, so an
	// expiry is a row of its own; an expired request keeps state
	// 'pending' in approval_requests and the triggers make it final.
	`
CREATE TABLE approval_expiries (
	approval_id  TEXT PRIMARY KEY REFERENCES approval_requests(id),
	reason       TEXT NOT NULL CHECK (reason != ''),
	expired_unix INTEGER NOT NULL
);
CREATE TRIGGER approval_expiries_pending_only BEFORE INSERT ON approval_expiries
	WHEN (SELECT state FROM approval_requests WHERE id = NEW.approval_id) IS NOT 'pending'
	BEGIN SELECT RAISE(ABORT, 'only a pending approval request expires'); END;
CREATE TRIGGER approval_expiries_final BEFORE UPDATE ON approval_expiries
	BEGIN SELECT RAISE(ABORT, 'an expiry is never changed'); END;
CREATE TRIGGER approval_expiries_kept BEFORE DELETE ON approval_expiries
	BEGIN SELECT RAISE(ABORT, 'an expiry is never removed'); END;
CREATE TRIGGER approval_requests_expired_final BEFORE UPDATE OF state ON approval_requests
	WHEN EXISTS (SELECT 1 FROM approval_expiries WHERE approval_id = OLD.id)
	BEGIN SELECT RAISE(ABORT, 'an expired approval request is never decided'); END;
CREATE TRIGGER leases_not_for_expired BEFORE INSERT ON leases
	WHEN EXISTS (SELECT 1 FROM approval_expiries WHERE approval_id = NEW.approval_id)
	BEGIN SELECT RAISE(ABORT, 'an expired approval request grants no lease'); END;
`,
	// 8: goal documents per revision (steps and criteria; a revision's
	// row is never changed, so the history stays), the index of each
	// goal's verdicts in the receipt log, and the step of each action.
	`
CREATE TABLE goal_revisions (
	goal         TEXT NOT NULL REFERENCES goals(id),
	revision     INTEGER NOT NULL CHECK (revision >= 1),
	document     TEXT NOT NULL,                    -- the canonical goal document (JSON)
	digest       TEXT NOT NULL,                    -- its SHA-256, hex
	created_unix INTEGER NOT NULL,
	PRIMARY KEY (goal, revision)
);
CREATE TRIGGER goal_revisions_never_changed BEFORE UPDATE ON goal_revisions
	BEGIN SELECT RAISE(ABORT, 'goal revisions are never changed'); END;
CREATE TRIGGER goal_revisions_never_deleted BEFORE DELETE ON goal_revisions
	BEGIN SELECT RAISE(ABORT, 'goal revisions are never deleted'); END;
CREATE TABLE goal_verdicts (
	log_idx      INTEGER PRIMARY KEY REFERENCES receipt_log(idx),
	goal         TEXT NOT NULL REFERENCES goals(id),
	revision     INTEGER NOT NULL,
	done         INTEGER NOT NULL CHECK (done IN (0, 1)),
	created_unix INTEGER NOT NULL
);
CREATE INDEX goal_verdicts_lookup ON goal_verdicts (goal, revision, log_idx);
ALTER TABLE actions ADD COLUMN step TEXT NOT NULL DEFAULT '';
`,
	// 9: contract grants (contracts.go). A grant is a lease whose uses
	// any argv its contract accepts may consume: its lease row (uses,
	// expiry, revocation, workspace; fingerprint is the grant's base)
	// and its approval request row (state 'approved', the identity without
	// argv, goal 'default') are the operator's one decision; this row says
	// which contract. An action admitted by one keeps the parse.
	`
CREATE TABLE contract_grants (
	lease_id     TEXT PRIMARY KEY REFERENCES leases(id),
	approval_id  TEXT NOT NULL UNIQUE REFERENCES approval_requests(id),
	contract     TEXT NOT NULL,
	digest       TEXT NOT NULL,                    -- the contract's Digest, hex
	created_unix INTEGER NOT NULL
);
CREATE TRIGGER contract_grants_final BEFORE UPDATE ON contract_grants
	BEGIN SELECT RAISE(ABORT, 'a contract grant is never changed'); END;
ALTER TABLE actions ADD COLUMN contract BLOB;  -- the parse (canonical CBOR) of an action a contract grant admitted
`,
	// 10: a pending request lives until RequestTTL (approvals.go), not
	// only while its requester is connected, and may be settled by a
	// contract grant. Each request's expiry is mirrored in
	// approval_requests.expired_unix (by trigger, never written
	// otherwise), so that the live pending requests have an index of
	// their own and the sweep of those past their TTL does not read every
	// request that ever expired. approval_covers names the contract grant
	// that settled a request as approved (EnableContract with a request):
	// its requester's lease. A request is approved either way, never both:
	// by a lease of its own or by a cover.
	`
ALTER TABLE approval_requests ADD COLUMN expired_unix INTEGER;
UPDATE approval_requests SET expired_unix = (SELECT e.expired_unix FROM approval_expiries e WHERE e.approval_id = approval_requests.id)
	WHERE id IN (SELECT approval_id FROM approval_expiries);
CREATE TRIGGER approval_expiries_mirrored AFTER INSERT ON approval_expiries
	BEGIN UPDATE approval_requests SET expired_unix = NEW.expired_unix WHERE id = NEW.approval_id; END;
CREATE TRIGGER approval_requests_expiry_mirror BEFORE UPDATE OF expired_unix ON approval_requests
	WHEN NEW.expired_unix IS NOT (SELECT expired_unix FROM approval_expiries WHERE approval_id = NEW.id)
	BEGIN SELECT RAISE(ABORT, 'expired_unix mirrors approval_expiries'); END;
CREATE TRIGGER approval_requests_born_unexpired BEFORE INSERT ON approval_requests
	WHEN NEW.expired_unix IS NOT NULL
	BEGIN SELECT RAISE(ABORT, 'expired_unix mirrors approval_expiries'); END;
CREATE INDEX approval_requests_live ON approval_requests (created_unix) WHERE state = 'pending' AND expired_unix IS NULL;
CREATE TABLE approval_covers (
	approval_id  TEXT PRIMARY KEY REFERENCES approval_requests(id),
	lease_id     TEXT NOT NULL REFERENCES contract_grants(lease_id),
	created_unix INTEGER NOT NULL
);
CREATE TRIGGER approval_covers_final BEFORE UPDATE ON approval_covers
	BEGIN SELECT RAISE(ABORT, 'a request''s cover is never changed'); END;
CREATE TRIGGER approval_covers_kept BEFORE DELETE ON approval_covers
	BEGIN SELECT RAISE(ABORT, 'a request''s cover is never removed'); END;
CREATE TRIGGER approval_covers_approved BEFORE INSERT ON approval_covers
	WHEN (SELECT state FROM approval_requests WHERE id = NEW.approval_id) IS NOT 'approved'
	BEGIN SELECT RAISE(ABORT, 'only an approved request is covered'); END;
CREATE TRIGGER approval_covers_not_leased BEFORE INSERT ON approval_covers
	WHEN EXISTS (SELECT 1 FROM leases WHERE approval_id = NEW.approval_id)
	BEGIN SELECT RAISE(ABORT, 'a request a lease was granted for is not covered'); END;
CREATE TRIGGER leases_not_for_covered BEFORE INSERT ON leases
	WHEN EXISTS (SELECT 1 FROM approval_covers WHERE approval_id = NEW.approval_id)
	BEGIN SELECT RAISE(ABORT, 'a covered request is granted no lease'); END;
`,
	// 11: the egress list a lease grants when the operator set another
	// than the one its request asked for (`broker approve --egress`): the
	// lease's fingerprint is that of the request's identity with this
	// list, and a submit of the request's fingerprint finds the lease by
	// it (AmendedLeases). Written with the lease, never changed or
	// removed; a contract grant has none.
	`
CREATE TABLE lease_egress (
	lease_id TEXT PRIMARY KEY REFERENCES leases(id),
	egress   TEXT NOT NULL              -- the canonical entries, sorted, separated by one space; '' grants none
);
CREATE TRIGGER lease_egress_final BEFORE UPDATE ON lease_egress
	BEGIN SELECT RAISE(ABORT, 'a lease''s egress is never changed'); END;
CREATE TRIGGER lease_egress_kept BEFORE DELETE ON lease_egress
	BEGIN SELECT RAISE(ABORT, 'a lease''s egress is never removed'); END;
CREATE TRIGGER lease_egress_not_for_grants BEFORE INSERT ON lease_egress
	WHEN EXISTS (SELECT 1 FROM contract_grants WHERE lease_id = NEW.lease_id)
	BEGIN SELECT RAISE(ABORT, 'a contract grant grants no egress'); END;
`,
}

// SchemaVersion is the journal schema this broker writes.
var SchemaVersion = len(migrations)

// migrate brings db up to SchemaVersion. A journal written by a newer
// broker is refused rather than guessed at.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	var have int
	err := db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&have)
	switch {
	case err == sql.ErrNoRows:
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return fmt.Errorf("init schema_version: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read schema_version: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("journal schema version %d is newer than this broker's %d", have, len(migrations))
	}
	for v := have; v < len(migrations); v++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin migration %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("apply migration %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, v+1); err != nil {
			tx.Rollback()
			return fmt.Errorf("record migration %d: %w", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit migration %d: %w", v+1, err)
		}
	}
	return nil
}
