package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// LogTx is one transaction of the receipt log's writer: everything an
// append records — the action's result, its link to the receipt, the
// signed entry and the checkpoint over the new log — commits together or
// not at all. Only InLogTx makes one.
type LogTx struct {
	ctx context.Context
	tx  *sql.Tx
	j   *Journal
}

// InLogTx runs fn in one fsync'd transaction, committed when fn returns
// nil and rolled back otherwise.
func (j *Journal) InLogTx(ctx context.Context, fn func(*LogTx) error) error {
	return j.tx(ctx, func(tx *sql.Tx) error { return fn(&LogTx{ctx: ctx, tx: tx, j: j}) })
}

// Finish records how an executing or running action ended, as
// Journal.Finish does, and receiptID as its receipt (as LinkReceipt),
// inside the log transaction: one write of the action's row, where the
// two would rewrite it twice.
func (t *LogTx) Finish(handle string, r *wire.Result, receiptID string) error {
	return t.j.finish(t.ctx, t.tx, handle, r, receiptID)
}

// LinkReceipt records receiptID as the receipt of handle. An action has
// at most one receipt.
func (t *LogTx) LinkReceipt(handle, receiptID string) error {
	u, err := t.tx.ExecContext(t.ctx, `UPDATE actions SET receipt_id = ? WHERE handle = ? AND receipt_id = ''`, receiptID, handle)
	if err != nil {
		return fmt.Errorf("link receipt %s: %w", receiptID, err)
	}
	if n, err := u.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("action %q does not exist or already has a receipt", handle)
	}
	return nil
}

// AppendEntry stores one signed log entry with its retained body. A
// receipt names its id and action; a deletion record passes "" for both.
func (t *LogTx) AppendEntry(e receipt.Entry, receiptID, handle string) error {
	var rid, h any
	if receiptID != "" {
		rid, h = receiptID, handle
	}
	_, err := t.tx.ExecContext(t.ctx, `INSERT INTO receipt_log (idx, receipt_id, handle, envelope, body, created_unix)
		VALUES (?, ?, ?, ?, ?, ?)`, e.Index, rid, h, e.Envelope, e.Body, t.j.now().Unix())
	if err != nil {
		return fmt.Errorf("store receipt log entry %d: %w", e.Index, err)
	}
	return nil
}

// Entries reads the whole log as this transaction sees it.
func (t *LogTx) Entries() ([]receipt.Entry, error) { return readEntries(t.ctx, t.tx) }

// Log reads the whole log, its checkpoints and the receipt ids the
// actions name as this transaction sees them.
func (t *LogTx) Log() (*LogSnapshot, error) { return readSnapshot(t.ctx, t.tx) }

// DropBody deletes the retained output body of entry idx; its envelope,
// with every digest and counter, stays.
func (t *LogTx) DropBody(idx int64) error {
	if _, err := t.tx.ExecContext(t.ctx, `UPDATE receipt_log SET body = NULL WHERE idx = ?`, idx); err != nil {
		return fmt.Errorf("drop the body of entry %d: %w", idx, err)
	}
	return nil
}

// StoreCheckpoint stores a signed checkpoint over the first size entries.
func (t *LogTx) StoreCheckpoint(size int64, note []byte) error {
	_, err := t.tx.ExecContext(t.ctx, `INSERT INTO receipt_checkpoints (size, note, created_unix) VALUES (?, ?, ?)`,
		size, note, t.j.now().Unix())
	if err != nil {
		return fmt.Errorf("store receipt checkpoint: %w", err)
	}
	return nil
}

// ReceiptEntries reads the whole receipt log in index order.
func (j *Journal) ReceiptEntries(ctx context.Context) ([]receipt.Entry, error) {
	return readEntries(ctx, j.db)
}

// receiptSchema is the first journal schema version with the receipt log.
const receiptSchema = 2

// LogSnapshot is the receipt log as one read transaction saw it.
type LogSnapshot struct {
	Entries     []receipt.Entry
	Checkpoints [][]byte          // signed notes, oldest first
	Named       map[string]string // receipt id → the action whose receipt_id names it
}

// ReceiptLog reads the entries, the checkpoints and the receipt ids the
// actions name in one read transaction, so all come from one snapshot.
func (j *Journal) ReceiptLog(ctx context.Context) (*LogSnapshot, error) {
	tx, err := j.readTx(ctx, receiptSchema, "read receipt log", "receipts")
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	return readSnapshot(ctx, tx)
}

// readSnapshot reads the entries, the checkpoints and the receipt ids the
// actions name as q sees them.
func readSnapshot(ctx context.Context, q rowsQuerier) (*LogSnapshot, error) {
	s := &LogSnapshot{Named: map[string]string{}}
	var err error
	if s.Entries, s.Checkpoints, err = readLog(ctx, q); err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT handle, receipt_id FROM actions WHERE receipt_id != ''`)
	if err != nil {
		return nil, fmt.Errorf("read the actions' receipt ids: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h, id string
		if err := rows.Scan(&h, &id); err != nil {
			return nil, fmt.Errorf("read the actions' receipt ids: %w", err)
		}
		s.Named[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the actions' receipt ids: %w", err)
	}
	return s, nil
}

// readTx begins a read transaction on a journal of at least schema
// version min, which introduced what; older ones are refused as what.
func (j *Journal) readTx(ctx context.Context, min int, what, introduced string) (*sql.Tx, error) {
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("%s: schema version: %w", what, err)
	}
	if version < min {
		tx.Rollback()
		return nil, fmt.Errorf("%s: journal schema %d predates %s; start the broker once to migrate it", what, version, introduced)
	}
	return tx, nil
}

// LatestCheckpoint returns the newest stored checkpoint, or nil when the
// log is empty.
func (j *Journal) LatestCheckpoint(ctx context.Context) ([]byte, error) {
	var note []byte
	err := j.db.QueryRowContext(ctx, `SELECT note FROM receipt_checkpoints ORDER BY seq DESC LIMIT 1`).Scan(&note)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the latest checkpoint: %w", err)
	}
	return note, nil
}

// WitnessReport is one stored witness report.
type WitnessReport struct {
	Path  string    // the witness file
	Size  int64     // the log size of the checkpoint last written, or tried
	Error string    // "" when that write succeeded
	At    time.Time // when (second precision)
}

// SaveWitnessReport appends one witness report.
func (j *Journal) SaveWitnessReport(ctx context.Context, r WitnessReport) error {
	return j.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO witness_reports (path, size, error, created_unix) VALUES (?, ?, ?, ?)`,
			r.Path, r.Size, r.Error, j.now().Unix())
		if err != nil {
			return fmt.Errorf("save witness report: %w", err)
		}
		return nil
	})
}

// LatestWitnessReport returns the last witness report, or nil when no
// broker has served with a witness (or the journal predates them).
func (j *Journal) LatestWitnessReport(ctx context.Context) (*WitnessReport, error) {
	var tables int
	if err := j.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'witness_reports'`).Scan(&tables); err != nil {
		return nil, fmt.Errorf("read witness report: %w", err)
	}
	if tables == 0 {
		return nil, nil // a journal from before witness reports has none
	}
	r := &WitnessReport{}
	var at int64
	err := j.db.QueryRowContext(ctx, `SELECT path, size, error, created_unix FROM witness_reports ORDER BY seq DESC LIMIT 1`).
		Scan(&r.Path, &r.Size, &r.Error, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read witness report: %w", err)
	}
	r.At = time.Unix(at, 0)
	return r, nil
}

// readLog reads the whole receipt log and its checkpoints.
func readLog(ctx context.Context, q rowsQuerier) (entries []receipt.Entry, checkpoints [][]byte, err error) {
	if entries, err = readEntries(ctx, q); err != nil {
		return nil, nil, err
	}
	if checkpoints, err = column[[]byte](ctx, q, `SELECT note FROM receipt_checkpoints ORDER BY seq`); err != nil {
		return nil, nil, fmt.Errorf("read receipt checkpoints: %w", err)
	}
	return entries, checkpoints, nil
}

// readEntries reads the whole receipt log in index order.
func readEntries(ctx context.Context, q rowsQuerier) ([]receipt.Entry, error) {
	rows, err := q.QueryContext(ctx, `SELECT idx, envelope, body FROM receipt_log ORDER BY idx`)
	if err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	defer rows.Close()
	var out []receipt.Entry
	for rows.Next() {
		var e receipt.Entry
		if err := rows.Scan(&e.Index, &e.Envelope, &e.Body); err != nil {
			return nil, fmt.Errorf("read receipt log: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	return out, nil
}

// Record is what the journal holds of one checkpointed action: enough to
// build its receipt without the executor.
type Record struct {
	Handle, LeaseID, ApprovalID, Goal, Session, Step string
	GoalRevision                                     uint64
	Fingerprint                                      []byte
	Identity                                         wire.CommandIdentity
	Requested                                        time.Time  // the approval request's creation (second precision)
	Approved                                         *time.Time // its decision (second precision), if decided
	Events                                           []Event    // the action's own events, in order
	// Parse is the contract's parse of the argv (canonical CBOR of a
	// contract.Parse) when a contract grant admitted the action, else nil.
	Parse []byte
}

// Event is one journalled event of an action.
type Event struct {
	Kind string
	At   time.Time
}

// approval sets the record's request and decision times from their
// columns (a LEFT JOIN's); false when there is no request.
func (r *Record) approval(requested, decided sql.NullInt64) bool {
	if !requested.Valid {
		return false
	}
	r.Requested = time.Unix(requested.Int64, 0)
	if decided.Valid {
		at := time.Unix(decided.Int64, 0)
		r.Approved = &at
	}
	return true
}

// Record reads the journalled facts of handle.
func (j *Journal) Record(ctx context.Context, handle string) (*Record, error) {
	r := &Record{Handle: handle}
	var idBlob []byte
	var requested sql.NullInt64
	var decided sql.NullInt64
	// The action and its approval request in one read (a LEFT JOIN, so
	// that a missing request is named, not taken for a missing action).
	err := j.db.QueryRowContext(ctx, `SELECT a.lease_id, a.approval_id, a.goal, a.goal_revision, a.session, a.step, a.fingerprint, a.identity,
		r.created_unix, r.decided_unix, a.contract
		FROM actions a LEFT JOIN approval_requests r ON r.id = a.approval_id WHERE a.handle = ?`, handle).Scan(
		&r.LeaseID, &r.ApprovalID, &r.Goal, &r.GoalRevision, &r.Session, &r.Step, &r.Fingerprint, &idBlob, &requested, &decided, &r.Parse)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "no action has handle %q", handle)
	}
	if err != nil {
		return nil, fmt.Errorf("read action: %w", err)
	}
	if err := wire.DecodeCanonical(idBlob, &r.Identity); err != nil {
		return nil, fmt.Errorf("decode identity of %s: %w", handle, err)
	}
	if !r.approval(requested, decided) {
		return nil, fmt.Errorf("read approval request %s: %w", r.ApprovalID, sql.ErrNoRows)
	}
	rows, err := j.db.QueryContext(ctx, `SELECT kind, at_unix_ns FROM action_events WHERE handle = ? ORDER BY seq`, handle)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", handle, err)
	}
	defer rows.Close()
	for rows.Next() {
		var e Event
		var ns int64
		if err := rows.Scan(&e.Kind, &ns); err != nil {
			return nil, fmt.Errorf("read events of %s: %w", handle, err)
		}
		e.At = time.Unix(0, ns)
		r.Events = append(r.Events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events of %s: %w", handle, err)
	}
	return r, nil
}

// Unsealed is an unknown action that has no receipt yet, with the reason
// its result gives.
type Unsealed struct {
	Handle string
	Why    *wire.Error
}

// UnknownWithoutReceipt lists the unknown actions that have no receipt,
// oldest first. An action whose stored result carries no reason gets one
// saying its end was not observed.
func (j *Journal) UnknownWithoutReceipt(ctx context.Context) ([]Unsealed, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT handle, result FROM actions WHERE state = 'unknown' AND receipt_id = ''
		ORDER BY created_unix, rowid`)
	if err != nil {
		return nil, fmt.Errorf("find unknown actions without a receipt: %w", err)
	}
	defer rows.Close()
	var out []Unsealed
	for rows.Next() {
		var u Unsealed
		var blob []byte
		if err := rows.Scan(&u.Handle, &blob); err != nil {
			return nil, fmt.Errorf("find unknown actions without a receipt: %w", err)
		}
		var res wire.Result
		if blob != nil && wire.DecodeCanonical(blob, &res) == nil && res.Error != nil {
			u.Why = res.Error
		} else {
			u.Why = UnknownResult("the broker did not observe how the action ended").Error
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find unknown actions without a receipt: %w", err)
	}
	return out, nil
}
