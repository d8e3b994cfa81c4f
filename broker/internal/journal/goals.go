package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"warrant/wire"
)

// DefaultGoal is the goal of every action submitted without one. It exists
// in every journal from the first migration, at revision 1, active. It is
// an ordinary goal: the operator may pause it (which revokes its leases)
// and resume it, and an agent may revise it. It has no goal document (no
// steps, no criteria), so it is never verified done.
const DefaultGoal = "default"

var goalStates = map[string]wire.GoalState{"active": wire.GoalActive, "paused": wire.GoalPaused, "cancelled": wire.GoalCancelled}

// Goal is a goal's current record.
type Goal struct {
	ID       string
	Title    string
	Revision uint64
	State    wire.GoalState
}

// Document is the goal document of one revision (broker/internal/goals),
// canonical JSON, with its SHA-256 in hex.
type Document struct {
	JSON   []byte
	Digest string
}

// Reply is the goal as the agent channel reports it.
func (g Goal) Reply() *wire.GoalReply {
	return &wire.GoalReply{Goal: g.ID, Revision: g.Revision, State: g.State}
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readGoal(ctx context.Context, q querier, id string) (Goal, error) {
	var g Goal
	var state string
	err := q.QueryRowContext(ctx, `SELECT id, title, revision, state FROM goals WHERE id = ?`, id).Scan(&g.ID, &g.Title, &g.Revision, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return g, wire.Errorf(wire.CodeArgumentsInvalid, "goal %q does not exist", id)
	}
	if err != nil {
		return g, fmt.Errorf("read goal %s: %w", id, err)
	}
	g.State = goalStates[state]
	if g.State == 0 {
		panic("journal: internal error: goal " + id + " has state " + state)
	}
	return g, nil
}

// Goal returns the goal id.
func (j *Journal) Goal(ctx context.Context, id string) (Goal, error) {
	return readGoal(ctx, j.db, id)
}

// CreateGoal opens a new active goal at revision 1, with doc as the
// document of that revision (nil: a goal without steps).
func (j *Journal) CreateGoal(ctx context.Context, title string, doc *Document) (Goal, error) {
	g := Goal{ID: NewID("g-"), Title: title, Revision: 1, State: wire.GoalActive}
	err := j.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO goals (id, title, revision, state, created_unix) VALUES (?, ?, 1, 'active', ?)`,
			g.ID, title, j.now().Unix()); err != nil {
			return err
		}
		return j.storeDocument(ctx, tx, g.ID, 1, doc)
	})
	if err != nil {
		return Goal{}, fmt.Errorf("create goal: %w", err)
	}
	return g, nil
}

func (j *Journal) storeDocument(ctx context.Context, tx *sql.Tx, goal string, revision uint64, doc *Document) error {
	if doc == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO goal_revisions (goal, revision, document, digest, created_unix) VALUES (?, ?, ?, ?, ?)`,
		goal, revision, string(doc.JSON), doc.Digest, j.now().Unix())
	return err
}

// ReviseGoal bumps the revision of an active or paused goal. doc is the
// new revision's document; nil keeps the current revision's (if any).
// The earlier revisions' documents stay. Leases are bound to the revision
// they were granted under, so none of the goal's existing leases matches
// afterwards, and verdicts name their revision, so none of the earlier
// ones counts either.
func (j *Journal) ReviseGoal(ctx context.Context, id string, doc *Document) (Goal, error) {
	var g Goal
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if g, err = readGoal(ctx, tx, id); err != nil {
			return err
		}
		if g.State == wire.GoalCancelled {
			return wire.Errorf(wire.CodeGoalInactive, "goal %s is cancelled and cannot be revised", id)
		}
		if doc == nil {
			if doc, err = readDocument(ctx, tx, id, g.Revision); err != nil {
				return err
			}
		}
		g.Revision++
		if _, err = tx.ExecContext(ctx, `UPDATE goals SET revision = ? WHERE id = ?`, g.Revision, id); err != nil {
			return err
		}
		return j.storeDocument(ctx, tx, id, g.Revision, doc)
	})
	if err != nil {
		return Goal{}, wrapUnlessCoded("revise goal", err)
	}
	return g, nil
}

// SetGoalState pauses, resumes or cancels a goal. Pausing or cancelling
// revokes every lease of the goal for good: resuming does not bring them
// back. A cancelled goal cannot be resumed.
func (j *Journal) SetGoalState(ctx context.Context, id string, state wire.GoalState) (Goal, error) {
	var g Goal
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if g, err = readGoal(ctx, tx, id); err != nil {
			return err
		}
		if g.State == wire.GoalCancelled && state != wire.GoalCancelled {
			return wire.Errorf(wire.CodeGoalInactive, "goal %s is cancelled and stays cancelled", id)
		}
		g.State = state
		if _, err := tx.ExecContext(ctx, `UPDATE goals SET state = ? WHERE id = ?`, state.String(), id); err != nil {
			return err
		}
		if state == wire.GoalActive {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE leases SET revoked_unix = ?, revoked_reason = ? WHERE goal = ? AND revoked_unix IS NULL`,
			j.now().Unix(), "goal "+state.String(), id)
		return err
	})
	if err != nil {
		return Goal{}, wrapUnlessCoded("set goal state", err)
	}
	return g, nil
}

// GoalDocument returns the document of the goal's revision, or nil when
// that revision has none.
func (j *Journal) GoalDocument(ctx context.Context, goal string, revision uint64) (*Document, error) {
	return readDocument(ctx, j.db, goal, revision)
}

func readDocument(ctx context.Context, q querier, goal string, revision uint64) (*Document, error) {
	var doc, digest string
	err := q.QueryRowContext(ctx, `SELECT document, digest FROM goal_revisions WHERE goal = ? AND revision = ?`,
		goal, revision).Scan(&doc, &digest)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read goal %s revision %d: %w", goal, revision, err)
	}
	return &Document{JSON: []byte(doc), Digest: digest}, nil
}

// Goals lists up to max goals, oldest first.
func (j *Journal) Goals(ctx context.Context, max int) ([]Goal, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT id, title, revision, state FROM goals ORDER BY created_unix, rowid LIMIT ?`, max)
	if err != nil {
		return nil, fmt.Errorf("list goals: %w", err)
	}
	defer rows.Close()
	var out []Goal
	for rows.Next() {
		var g Goal
		var state string
		if err := rows.Scan(&g.ID, &g.Title, &g.Revision, &state); err != nil {
			return nil, fmt.Errorf("list goals: %w", err)
		}
		if g.State = goalStates[state]; g.State == 0 {
			panic("journal: internal error: goal " + g.ID + " has state " + state)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list goals: %w", err)
	}
	return out, nil
}

// RecordVerdict records that log entry idx (appended in this
// transaction) is a verdict on goal under revision.
func (t *LogTx) RecordVerdict(idx int64, goal string, revision uint64, done bool) error {
	_, err := t.tx.ExecContext(t.ctx, `INSERT INTO goal_verdicts (log_idx, goal, revision, done, created_unix) VALUES (?, ?, ?, ?, ?)`,
		idx, goal, revision, done, t.j.now().Unix())
	if err != nil {
		return fmt.Errorf("record verdict %d: %w", idx, err)
	}
	return nil
}

// LatestVerdict returns the log index and stored envelope of the latest
// verdict on goal under revision; ok is false when there is none. The
// caller checks the envelope's signature: the journal row is only an
// index.
func (j *Journal) LatestVerdict(ctx context.Context, goal string, revision uint64) (idx int64, envelope []byte, ok bool, err error) {
	err = j.db.QueryRowContext(ctx, `SELECT v.log_idx, l.envelope FROM goal_verdicts v JOIN receipt_log l ON l.idx = v.log_idx
		WHERE v.goal = ? AND v.revision = ? ORDER BY v.log_idx DESC LIMIT 1`, goal, revision).Scan(&idx, &envelope)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("read the latest verdict of goal %s: %w", goal, err)
	}
	return idx, envelope, true, nil
}

// wrapUnlessCoded passes a *wire.Error through unchanged (it already is a
// sentence for the client) and wraps anything else.
func wrapUnlessCoded(verb string, err error) error {
	if err == nil {
		return nil
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	return fmt.Errorf("%s: %w", verb, err)
}
