package broker

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// receiptLog is the broker's one receipt chain and its one writer. Every
// append (a receipt or a deletion record) is stored with a fresh signed
// checkpoint in the same fsync'd transaction as what it records, so the
// stored log never has an unanchored tail: cutting entries off the end is
// always caught by the latest checkpoint (unless the checkpoints are cut
// too, which is why `broker receipts verify` prints the latest one for the
// operator to keep elsewhere).
type receiptLog struct {
	keys *receipt.Keys

	mu    sync.Mutex // serializes appends: one chain, one writer
	chain *receipt.Chain
}

func openReceiptLog(ctx context.Context, j *Journal, keys *receipt.Keys) (*receiptLog, error) {
	l := &receiptLog{keys: keys}
	if err := l.reload(ctx, j); err != nil {
		return nil, err
	}
	return l, nil
}

// reload rebuilds the chain from the stored log. It runs at start and
// after a failed append, whose Seal advanced the chain past the store.
func (l *receiptLog) reload(ctx context.Context, j *Journal) error {
	l.chain = nil
	entries, err := readEntries(ctx, j.db)
	if err != nil {
		return err
	}
	c, err := receipt.NewChain(l.keys, entries)
	if err != nil {
		return fmt.Errorf("resume the receipt log (run `broker receipts verify`): %w", err)
	}
	l.chain = c
	return nil
}

// appendLog runs fn in one journal transaction with the chain; when fn
// appended (it returns true), a checkpoint of the new log is stored in
// the same transaction.
func (b *Broker) appendLog(ctx context.Context, fn func(tx *sql.Tx, c *receipt.Chain) (bool, error)) error {
	l := b.rlog
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.chain == nil {
		if err := l.reload(ctx, b.j); err != nil {
			return err
		}
	}
	before := l.chain.Len()
	err := b.j.tx(ctx, func(tx *sql.Tx) error {
		appended, err := fn(tx, l.chain)
		if err != nil || !appended {
			return err
		}
		cp, err := l.chain.Checkpoint()
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO receipt_checkpoints (size, note, created_unix) VALUES (?, ?, ?)`,
			l.chain.Len(), cp, b.cfg.Now().Unix())
		return err
	})
	if err != nil && l.chain.Len() != before {
		if rerr := l.reload(ctx, b.j); rerr != nil {
			b.cfg.Logf("receipt log: %v", rerr)
		}
	}
	return err
}

func insertEntry(ctx context.Context, tx *sql.Tx, e receipt.Entry, receiptID, handle any, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO receipt_log (idx, receipt_id, handle, envelope, body, created_unix)
		VALUES (?, ?, ?, ?, ?, ?)`, e.Index, receiptID, handle, e.Envelope, e.Body, now.Unix())
	if err != nil {
		return fmt.Errorf("store receipt log entry %d: %w", e.Index, err)
	}
	return nil
}

// SealReceipt assigns r an id if it has none, seals it with its streams
// into the chain, and stores the signed entry, its retained body and its
// link to the action (r.Action) in one fsync'd transaction with a new
// checkpoint. An action has at most one receipt. The action's state is
// left as it is; FinishWithReceipt also records the outcome.
func (b *Broker) SealReceipt(ctx context.Context, r *receipt.Receipt, streams ...*receipt.Captured) (string, error) {
	return b.sealReceipt(ctx, nil, r, streams)
}

// FinishWithReceipt records how an action ended (as Finish) and its
// receipt (as SealReceipt) in one transaction, so a terminal status
// always carries its receipt id and no receipt exists for an action still
// in flight. res.ReceiptID is set to the receipt's id.
func (b *Broker) FinishWithReceipt(ctx context.Context, res *wire.Result, r *receipt.Receipt, streams ...*receipt.Captured) (string, error) {
	defer b.notify()
	return b.sealReceipt(ctx, res, r, streams)
}

func (b *Broker) sealReceipt(ctx context.Context, res *wire.Result, r *receipt.Receipt, streams []*receipt.Captured) (string, error) {
	if r.ID == "" {
		r.ID = newID("r-")
	}
	err := b.appendLog(ctx, func(tx *sql.Tx, c *receipt.Chain) (bool, error) {
		if res != nil {
			res.ReceiptID = r.ID
			if err := b.j.finish(ctx, tx, r.Action, res); err != nil {
				return false, err
			}
		}
		u, err := tx.ExecContext(ctx, `UPDATE actions SET receipt_id = ? WHERE handle = ? AND receipt_id = ''`, r.ID, r.Action)
		if err != nil {
			return false, err
		}
		if n, err := u.RowsAffected(); err != nil || n != 1 {
			return false, fmt.Errorf("action %q does not exist or already has a receipt", r.Action)
		}
		e, err := c.Seal(r, streams...)
		if err != nil {
			return false, err
		}
		return true, insertEntry(ctx, tx, e, r.ID, r.Action, b.cfg.Now())
	})
	if err != nil {
		if res != nil {
			res.ReceiptID = "" // nothing was stored
		}
		return "", wrapUnlessCoded("seal receipt", err)
	}
	return r.ID, nil
}

// PruneReceipts deletes the retained output bodies of receipts issued
// before cutoff, keeping the receipts (with their digests and counters),
// and appends a signed deletion record naming them under policy, all in
// one transaction. It returns the log indexes whose bodies were deleted
// and the deletion record's index, or no indexes when nothing was due.
func (b *Broker) PruneReceipts(ctx context.Context, cutoff time.Time, policy string) (pruned []int64, record int64, err error) {
	err = b.appendLog(ctx, func(tx *sql.Tx, c *receipt.Chain) (bool, error) {
		entries, err := readEntries(ctx, tx)
		if err != nil {
			return false, err
		}
		rec, idx, ok, err := c.Prune(entries, cutoff, policy, b.Stamp(b.cfg.Now()))
		if err != nil || !ok {
			return false, err
		}
		for _, i := range idx {
			if _, err := tx.ExecContext(ctx, `UPDATE receipt_log SET body = NULL WHERE idx = ?`, i); err != nil {
				return false, err
			}
		}
		pruned, record = idx, rec.Index
		return true, insertEntry(ctx, tx, rec, nil, nil, b.cfg.Now())
	})
	if err != nil {
		return nil, 0, fmt.Errorf("prune receipts: %w", err)
	}
	return pruned, record, nil
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

// readCheckpoints reads every stored checkpoint, oldest first.
func readCheckpoints(ctx context.Context, q rowsQuerier) ([][]byte, error) {
	out, err := column[[]byte](ctx, q, `SELECT note FROM receipt_checkpoints ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("read receipt checkpoints: %w", err)
	}
	return out, nil
}
