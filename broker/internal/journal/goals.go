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
// and resume it, and an agent may revise it. Criteria and steps arrive with
// the goals issue; here a goal is an id, a revision and a state.
const DefaultGoal = "default"

var goalStates = map[string]wire.GoalState{"active": wire.GoalActive, "paused": wire.GoalPaused, "cancelled": wire.GoalCancelled}

// Goal is a goal's current record.
type Goal struct {
	ID       string
	Revision uint64
	State    wire.GoalState
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
	err := q.QueryRowContext(ctx, `SELECT id, revision, state FROM goals WHERE id = ?`, id).Scan(&g.ID, &g.Revision, &state)
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

// CreateGoal opens a new active goal at revision 1.
func (j *Journal) CreateGoal(ctx context.Context, title string) (Goal, error) {
	g := Goal{ID: NewID("g-"), Revision: 1, State: wire.GoalActive}
	_, err := j.db.ExecContext(ctx, `INSERT INTO goals (id, title, revision, state, created_unix) VALUES (?, ?, 1, 'active', ?)`,
		g.ID, title, j.now().Unix())
	if err != nil {
		return Goal{}, fmt.Errorf("create goal: %w", err)
	}
	return g, nil
}

// ReviseGoal bumps the revision of an active or paused goal. Leases are
// bound to the revision they were granted under, so none of the goal's
// existing leases matches afterwards.
func (j *Journal) ReviseGoal(ctx context.Context, id string) (Goal, error) {
	var g Goal
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if g, err = readGoal(ctx, tx, id); err != nil {
			return err
		}
		if g.State == wire.GoalCancelled {
			return wire.Errorf(wire.CodeGoalInactive, "goal %s is cancelled and cannot be revised", id)
		}
		g.Revision++
		_, err = tx.ExecContext(ctx, `UPDATE goals SET revision = ? WHERE id = ?`, g.Revision, id)
		return err
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
