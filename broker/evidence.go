package broker

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// Stamp returns t on the receipt clocks: the wall clock, and the broker's
// monotonic clock measured from Open. A t read from time.Now carries a
// monotonic reading and is placed exactly; a time read back from the
// journal (wall clock only) is placed by its wall-clock distance from
// Open, which is negative for events before this broker started.
func (b *Broker) Stamp(t time.Time) receipt.Time {
	return receipt.Stamp(t.Sub(b.opened), t)
}

// NewReceipt returns the receipt of a checkpointed action with every fact
// the broker journalled filled in: ids, session, goal and revision, lease
// and approval, identity (environment names only) and fingerprint, the
// profile's limits (as enforced by the launcher's rlimits; the runner
// says "none" for an action that never reached Ready), the
// issued time, and the REQUESTED, APPROVED and EXECUTING events. The
// runner adds what it observes (sandbox, start, end, pid, exit or signal,
// group gone, outcome, STARTED … TERMINATED) and calls FinishWithReceipt.
func (b *Broker) NewReceipt(ctx context.Context, l *Launch) (*receipt.Receipt, error) {
	r, err := b.journalledReceipt(ctx, l.Handle, receipt.EventExecuting)
	if err != nil {
		return nil, fmt.Errorf("prepare receipt of %s: %w", l.Handle, err)
	}
	r.Limits = receipt.LimitsOf(r.Identity.Profile, receipt.EnforcedByRlimit)
	return r, nil
}

// journalledReceipt builds a receipt of handle from the journal alone,
// with the journalled events up to last. Outcome and limits are left for
// the caller.
func (b *Broker) journalledReceipt(ctx context.Context, handle string, last receipt.EventType) (*receipt.Receipt, error) {
	var leaseID, approvalID, goal, session string
	var revision uint64
	var fingerprint, idBlob []byte
	err := b.j.db.QueryRowContext(ctx, `SELECT lease_id, approval_id, goal, goal_revision, session, fingerprint, identity
		FROM actions WHERE handle = ?`, handle).Scan(&leaseID, &approvalID, &goal, &revision, &session, &fingerprint, &idBlob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "no action has handle %q", handle)
	}
	if err != nil {
		return nil, fmt.Errorf("read action: %w", err)
	}
	var id wire.CommandIdentity
	if err := decodeStored(idBlob, &id); err != nil {
		return nil, fmt.Errorf("decode identity: %w", err)
	}
	r := &receipt.Receipt{Format: receipt.Format, ID: newID("r-"), Action: handle, Session: session,
		Goal: goal, GoalRevision: &revision, LeaseID: leaseID, ApprovalID: approvalID,
		Identity: receipt.IdentityOf(&id), Fingerprint: hex.EncodeToString(fingerprint),
		Issued: b.Stamp(b.cfg.Now())}
	if r.Events, err = b.journalledEvents(ctx, handle, approvalID, last); err != nil {
		return nil, err
	}
	return r, nil
}

// journalledEvents returns the receipt events of an action as journalled:
// REQUESTED and APPROVED from its approval request (second precision),
// then its own events up to last. Events the receipt format does not name
// (an operator's classification) are left out.
func (b *Broker) journalledEvents(ctx context.Context, handle, approvalID string, last receipt.EventType) ([]receipt.Event, error) {
	var requested int64
	var decided sql.NullInt64
	if err := b.j.db.QueryRowContext(ctx, `SELECT created_unix, decided_unix FROM approval_requests WHERE id = ?`,
		approvalID).Scan(&requested, &decided); err != nil {
		return nil, fmt.Errorf("read approval request %s: %w", approvalID, err)
	}
	at := []time.Time{time.Unix(requested, 0)}
	kinds := []receipt.EventType{receipt.EventRequested}
	if decided.Valid {
		at, kinds = append(at, time.Unix(decided.Int64, 0)), append(kinds, receipt.EventApproved)
	}
	rows, err := b.j.db.QueryContext(ctx, `SELECT kind, at_unix_ns FROM action_events WHERE handle = ? ORDER BY seq`, handle)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", handle, err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var ns int64
		if err := rows.Scan(&kind, &ns); err != nil {
			return nil, fmt.Errorf("read events of %s: %w", handle, err)
		}
		var t receipt.EventType
		if t.UnmarshalText([]byte(kind)) != nil || t <= kinds[len(kinds)-1] || t > last {
			continue
		}
		at, kinds = append(at, time.Unix(0, ns)), append(kinds, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events of %s: %w", handle, err)
	}
	events := make([]receipt.Event, len(kinds))
	for i := range kinds {
		events[i] = receipt.Event{Type: kinds[i], At: b.Stamp(at[i])}
		// Journalled times are wall-clock readings; should the wall clock
		// have stepped back between two of them, the later event keeps
		// the earlier one's monotonic reading rather than run backwards.
		if i > 0 && events[i].At.MonoNs < events[i-1].At.MonoNs {
			events[i].At.MonoNs = events[i-1].At.MonoNs
		}
	}
	return events, nil
}

// unexecutedReceipt builds, from the journal alone, the receipt of an
// action that never started (known_not_executed) or whose end the broker
// did not observe (unknown). It claims nothing else: no pid, exit, signal,
// sandbox facts or group-gone evidence, and limits enforced by "none" or
// "unknown".
func (b *Broker) unexecutedReceipt(ctx context.Context, handle string, o wire.Outcome, why *wire.Error) (*receipt.Receipt, error) {
	last, enforced := receipt.EventExecuting, receipt.EnforcedByNone
	if o == wire.OutcomeUnknown {
		last, enforced = receipt.EventUnknownTermination, receipt.EnforcedByUnknown
	}
	r, err := b.journalledReceipt(ctx, handle, last)
	if err != nil {
		return nil, fmt.Errorf("prepare %s receipt of %s: %w", o, handle, err)
	}
	r.Outcome, r.Error = o, &receipt.Refusal{Code: why.Code, Message: why.Message}
	r.Limits = receipt.LimitsOf(r.Identity.Profile, enforced)
	return r, nil
}

// sealUnknownReceipts gives every unknown action without a receipt (left
// in flight by a previous broker, or marked unknown without one) its
// unknown receipt, so the log says where its gap is. A failure is logged
// and retried at the next start.
func (b *Broker) sealUnknownReceipts(ctx context.Context) error {
	rows, err := b.j.db.QueryContext(ctx, `SELECT handle, result FROM actions WHERE state = 'unknown' AND receipt_id = ''
		ORDER BY created_unix, rowid`)
	if err != nil {
		return fmt.Errorf("find unknown actions without a receipt: %w", err)
	}
	type pending struct {
		handle string
		why    *wire.Error
	}
	var todo []pending
	for rows.Next() {
		var p pending
		var blob []byte
		if err := rows.Scan(&p.handle, &blob); err != nil {
			rows.Close()
			return fmt.Errorf("find unknown actions without a receipt: %w", err)
		}
		var res wire.Result
		if blob != nil && decodeStored(blob, &res) == nil && res.Error != nil {
			p.why = res.Error
		} else {
			p.why = unknownResult("the broker did not observe how the action ended").Error
		}
		todo = append(todo, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find unknown actions without a receipt: %w", err)
	}
	for _, p := range todo {
		r, err := b.unexecutedReceipt(ctx, p.handle, wire.OutcomeUnknown, p.why)
		if err == nil {
			_, err = b.SealReceipt(ctx, r)
		}
		if err != nil {
			b.cfg.Logf("action %s: seal its unknown receipt: %v", p.handle, err)
		}
	}
	return nil
}
