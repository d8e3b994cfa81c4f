package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"warrant/wire"
)

var actionStates = map[string]wire.ActionState{
	"executing": wire.StateAccepted, "running": wire.StateRunning,
	"terminal": wire.StateTerminal, "unknown": wire.StateUnknown,
}

// Checkpoint is the durable EXECUTING checkpoint (docs/architecture.md §2.3, §3.3).
// In ONE transaction it re-checks lease l (revocation, expiry, remaining
// uses, goal state and revision) and that the session has no action in
// flight (BUSY), consumes one use, and records a new action as executing.
// The transaction is committed with synchronous=NORMAL, durable across
// the broker's death when Checkpoint returns, and the WAL's fsync is
// started at once: durable waits for it and says whether the record is
// durable across the host's too. The action may be prepared meanwhile (its
// launcher confines itself), but nothing of it may execute, nor may the
// submit be answered, before durable returned nil. A use is never given
// back: if the broker dies after the commit the action becomes unknown on
// restart, with its use still spent; if the host goes down before the
// fsync, the transaction may be lost with it, and nothing of the action
// ran. The action's goal step (step, "" for none) is recorded with it. A
// call (nil for none) is bound to the new action in the same transaction
// (bindCall), first, so a repeat of a call that already started an action
// is ErrCallStarted, not BUSY. Afterwards l.UsesLeft is what the lease has
// left. A contract grant's lease (UnderContract) is consumed the same way,
// and the action keeps its parse. Afterwards l.Checkpointed is the
// action's record as written (nil if Checkpoint failed).
func (j *Journal) Checkpoint(ctx context.Context, l *Lease, session, step string, id *wire.CommandIdentity, call *Call) (handle string, durable func() error, err error) {
	blob, err := wire.Canonical(id)
	if err != nil {
		return "", nil, fmt.Errorf("checkpoint: %w", err)
	}
	handle = NewID("a-")
	j.crashPoint("checkpoint:begin")
	l.checkpointed = nil
	var rec *Record
	err = j.relaxedTx(ctx, func(tx *sql.Tx) error {
		if err := j.bindCall(ctx, tx, call, handle, ""); err != nil {
			return err
		}
		u, err := j.leaseUsable(ctx, tx, l)
		if err != nil {
			return err
		}
		if err := sessionIdle(ctx, tx, session); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE leases SET uses_left = uses_left - 1 WHERE id = ? AND uses_left > 0`, l.id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("consume a use of lease %s: %d rows, %v", l.id, n, err)
		}
		l.usesLeft = u.left - 1 // read in this immediate transaction, which no other writer shares
		now := j.now().Unix()
		if _, err := tx.ExecContext(ctx, `INSERT INTO actions (handle, lease_id, approval_id, goal, goal_revision, session,
			executable, fingerprint, identity, state, created_unix, updated_unix, step, contract)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'executing', ?, ?, ?, ?)`,
			handle, l.id, l.approvalID, l.goal, l.revision, session, id.Executable.Requested, l.fingerprint, blob, now, now, step, l.parse); err != nil {
			return err
		}
		detail := "lease " + l.id
		if l.contract != "" {
			detail += " (contract " + l.contract + ")"
		}
		at, err := j.eventAt(ctx, tx, handle, "EXECUTING", detail)
		if err != nil {
			return err
		}
		rec = &Record{Handle: handle, LeaseID: l.id, ApprovalID: l.approvalID, Goal: l.goal, Session: session, Step: step,
			GoalRevision: l.revision, Fingerprint: l.fingerprint, Identity: *id,
			Events: []Event{{Kind: "EXECUTING", At: at}}, Parse: l.parse}
		if !rec.approval(u.requested, u.decided) {
			rec = nil // Record names the missing request
		}
		j.crashPoint("checkpoint:in-tx")
		return nil
	})
	if err != nil {
		return "", nil, wrapUnlessCoded("checkpoint", err)
	}
	l.checkpointed = rec
	j.crashPoint("checkpoint:committed")
	return handle, j.syncAhead(), nil
}

// MarkRunning records that the launcher started the action's process.
// Like RecordOrigin it is committed without an fsync: recovery treats an
// executing and a running action alike (both become unknown), so losing
// this commit with the host loses no fact recovery acts on, and it
// survives the death of the broker that made it.
func (j *Journal) MarkRunning(ctx context.Context, handle string) error {
	err := j.relaxedTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE actions SET state = 'running', updated_unix = ? WHERE handle = ? AND state = 'executing'`,
			j.now().Unix(), handle)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("action %s is not executing", handle)
		}
		return j.event(ctx, tx, handle, "STARTED", "")
	})
	return wrapUnlessCoded("mark running", err)
}

// Finish records how an executing or running action ended. An unknown
// outcome leaves the action unknown; anything else makes it terminal.
func (j *Journal) Finish(ctx context.Context, handle string, r *wire.Result) error {
	err := j.tx(ctx, func(tx *sql.Tx) error { return j.finish(ctx, tx, handle, r, "") })
	return wrapUnlessCoded("finish action", err)
}

// finish is Finish in tx; with a receiptID it also links that receipt
// (as LogTx.LinkReceipt), in the same write of the action's row.
func (j *Journal) finish(ctx context.Context, tx *sql.Tx, handle string, r *wire.Result, receiptID string) error {
	state, kind := "terminal", "TERMINATED"
	if r.Outcome == wire.OutcomeUnknown {
		state, kind = "unknown", "UNKNOWN_TERMINATION"
	}
	blob, err := wire.Canonical(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	set, where, or, args := "", "", "", []any{state, r.Outcome.String(), blob, j.now().Unix()}
	if receiptID != "" { // set only where none is
		set, where, or, args = ", receipt_id = ?", " AND receipt_id = ''", ", or already has a receipt", append(args, receiptID)
	}
	res, err := tx.ExecContext(ctx, `UPDATE actions SET state = ?, outcome = ?, result = ?, updated_unix = ?`+set+`
		WHERE handle = ? AND state IN ('executing', 'running')`+where, append(args, handle)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("action %s is not in flight%s", handle, or)
	}
	return j.event(ctx, tx, handle, kind, r.Outcome.String())
}

// Status returns what query and wait report about handle.
func (j *Journal) Status(ctx context.Context, handle string) (*wire.Status, error) {
	var state, receiptID string
	var blob []byte
	err := j.db.QueryRowContext(ctx, `SELECT state, result, receipt_id FROM actions WHERE handle = ?`, handle).Scan(&state, &blob, &receiptID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "no action has handle %q", handle)
	}
	if err != nil {
		return nil, fmt.Errorf("read action %s: %w", handle, err)
	}
	st := &wire.Status{Handle: handle, State: actionStates[state]}
	if st.State == 0 {
		panic("journal: internal error: action " + handle + " has state " + state)
	}
	if blob != nil {
		st.Result = new(wire.Result)
		if err := wire.DecodeCanonical(blob, st.Result); err != nil {
			return nil, fmt.Errorf("decode result of %s: %w", handle, err)
		}
		if receiptID != "" {
			st.Result.ReceiptID = receiptID // linked when the receipt was stored
		}
	}
	return st, nil
}

// Actions lists actions, newest first, at most limit of them after the
// action after (none: from the newest; see page); with
// unknownOnly, only those whose outcome is unknown and not yet classified
// by the operator.
func (j *Journal) Actions(ctx context.Context, unknownOnly bool, after string, limit int) ([]wire.ActionView, error) {
	cond, args, err := page(ctx, j.db, "actions", "handle", after, true)
	if err != nil {
		return nil, fmt.Errorf("list actions: %w", err)
	}
	if unknownOnly {
		cond += ` AND state = 'unknown' AND classification = ''`
	}
	rows, err := j.db.QueryContext(ctx, `SELECT handle, session, goal, executable, fingerprint, state, outcome, created_unix,
		identity, result FROM actions WHERE `+cond+` ORDER BY created_unix DESC, rowid DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list actions: %w", err)
	}
	defer rows.Close()
	var out []wire.ActionView
	for rows.Next() {
		var v wire.ActionView
		var state, outcome string
		var idBlob, resBlob []byte
		if err := rows.Scan(&v.Handle, &v.Session, &v.Goal, &v.Executable, &v.Fingerprint, &state, &outcome, &v.CreatedUnix,
			&idBlob, &resBlob); err != nil {
			return nil, fmt.Errorf("list actions: %w", err)
		}
		id, err := decodeIdentity(idBlob)
		if err != nil {
			return nil, fmt.Errorf("list actions: %s: %w", v.Handle, err)
		}
		v.Argv, v.ArgvTruncated = wire.ListedArgv(id.Argv)
		if resBlob != nil {
			var r wire.Result
			if err := wire.DecodeCanonical(resBlob, &r); err != nil {
				return nil, fmt.Errorf("list actions: decode result of %s: %w", v.Handle, err)
			}
			v.ExitCode, v.Signal = r.ExitCode, r.Signal
		}
		v.State = actionStates[state]
		if outcome != "" {
			if err := v.Outcome.UnmarshalText([]byte(outcome)); err != nil {
				return nil, fmt.Errorf("list actions: %s: %w", v.Handle, err)
			}
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Resolve records the operator's classification of an unknown action. It
// is an operator statement: the outcome stays unknown and no process
// receipt is made up.
func (j *Journal) Resolve(ctx context.Context, handle string, c wire.Classification, note string) error {
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var state, class string
		err := tx.QueryRowContext(ctx, `SELECT state, classification FROM actions WHERE handle = ?`, handle).Scan(&state, &class)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return wire.Errorf(wire.CodeArgumentsInvalid, "no action has handle %q", handle)
		case err != nil:
			return err
		case state != "unknown":
			return wire.Errorf(wire.CodeArgumentsInvalid, "action %s is %s, not unknown; only unknown outcomes are classified", handle, state)
		case class != "":
			return wire.Errorf(wire.CodeArgumentsInvalid, "action %s was already classified as %s", handle, class)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE actions SET classification = ?, note = ?, updated_unix = ? WHERE handle = ?`,
			c.String(), note, j.now().Unix(), handle); err != nil {
			return err
		}
		return j.event(ctx, tx, handle, "OPERATOR_RESOLVED", c.String()+": "+note)
	})
	return wrapUnlessCoded("resolve", err)
}

// sessionIdle refuses a second action in flight for one agent session
// (docs/architecture.md §2.6). The check runs in the checkpoint's transaction, so
// two concurrent submits of one session cannot both pass it. Actions
// without a session are each their own session.
func sessionIdle(ctx context.Context, tx *sql.Tx, session string) error {
	if session == "" {
		return nil
	}
	var handle string
	err := tx.QueryRowContext(ctx, `SELECT handle FROM actions WHERE session = ? AND state IN ('executing', 'running') LIMIT 1`,
		session).Scan(&handle)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	return wire.Errorf(wire.CodeBusy, "session %s already has action %s in flight; wait for it or cancel it", session, handle)
}

// RecordEvent journals one lifecycle event of an action in flight (for
// example TERM_SENT, KILL_SENT or SURVIVORS) as it is observed. STARTED
// and the terminal events are recorded by MarkRunning and Finish.
func (j *Journal) RecordEvent(ctx context.Context, handle, kind, detail string) error {
	err := j.tx(ctx, func(tx *sql.Tx) error { return j.event(ctx, tx, handle, kind, detail) })
	return wrapUnlessCoded("record event", err)
}

// Origin is an action's first process as recorded at launch: its pid, its
// start time in clock ticks after boot, and the boot's id.
type Origin struct {
	Pid   int
	Start uint64
	Boot  string
}

// RecordOrigin records the first process of an executing action, before
// it is told to proceed (it executes nothing until then). The transaction
// is committed without an fsync (synchronous=NORMAL): the record is read
// only to find processes that outlived a broker, which exist only if the
// host did not go down, and a commit is durable across the death of the
// process that made it. The journal returns to synchronous=FULL before
// its connection is used again, or the connection is discarded.
func (j *Journal) RecordOrigin(ctx context.Context, handle string, o Origin) error {
	err := j.relaxedTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO action_origins (handle, pid, start_ticks, boot_id)
			SELECT handle, ?, ?, ? FROM actions WHERE handle = ? AND state = 'executing'`, o.Pid, int64(o.Start), o.Boot, handle)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("action %s is not executing", handle)
		}
		return nil
	})
	return wrapUnlessCoded("record the action's origin", err)
}

// Origins returns the recorded origin of each of handles that has one.
func (j *Journal) Origins(ctx context.Context, handles []string) (map[string]Origin, error) {
	out := make(map[string]Origin, len(handles))
	for _, h := range handles {
		var o Origin
		var start int64
		err := j.db.QueryRowContext(ctx, `SELECT pid, start_ticks, boot_id FROM action_origins WHERE handle = ?`, h).Scan(&o.Pid, &start, &o.Boot)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return nil, fmt.Errorf("read the origin of %s: %w", h, err)
		}
		o.Start = uint64(start)
		out[h] = o
	}
	return out, nil
}
