package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"warrant/broker/internal/journal"
	"warrant/broker/internal/witness"
	"warrant/receipt"
	"warrant/wire"
)

// receiptLog is the broker's one receipt chain and its one writer. Every
// append (a receipt or a deletion record) is stored with a fresh signed
// checkpoint in the same fsync'd transaction as what it records, so the
// stored log never has an unanchored tail: the newest checkpoint always
// covers the whole log, and `broker receipts verify` fails on a log it
// does not (receipt.Expect.Checkpointed). Cutting entries and their
// checkpoints together is caught by the actions that name the cut
// receipts, and by any checkpoint kept outside the state directory: the
// operator's copy (`broker receipts checkpoint`) or the witness file,
// written after each commit (broker/internal/witness).
type receiptLog struct {
	keys    *receipt.Keys
	witness *witness.Witness // nil without --witness

	mu       sync.Mutex // serializes appends: one chain, one writer
	chain    *receipt.Chain
	verifier *receipt.Verifier // the goals oracle's, under mu: it re-checks only entries it has not seen
}

func openReceiptLog(ctx context.Context, j *journal.Journal, keys *receipt.Keys) (*receiptLog, error) {
	l := &receiptLog{keys: keys, verifier: receipt.NewVerifier(keys.Public())}
	if err := l.reload(ctx, j); err != nil {
		return nil, err
	}
	return l, nil
}

// reload rebuilds the chain from the stored log. It runs at start and
// after a failed append, whose Seal advanced the chain past the store.
func (l *receiptLog) reload(ctx context.Context, j *journal.Journal) error {
	l.chain = nil
	entries, err := j.ReceiptEntries(ctx)
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
func (b *Broker) appendLog(ctx context.Context, fn func(tx *journal.LogTx, c *receipt.Chain) (bool, error)) error {
	l := b.rlog
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.chain == nil {
		if err := l.reload(ctx, b.j); err != nil {
			return err
		}
	}
	before := l.chain.Len()
	var cp []byte
	err := b.j.InLogTx(ctx, func(tx *journal.LogTx) error {
		appended, err := fn(tx, l.chain)
		if err != nil || !appended {
			return err
		}
		if cp, err = l.chain.Checkpoint(); err != nil {
			return err
		}
		return tx.StoreCheckpoint(l.chain.Len(), cp)
	})
	switch {
	case err != nil && l.chain.Len() != before:
		if rerr := l.reload(ctx, b.j); rerr != nil {
			b.cfg.Logf("receipt log: %v", rerr)
		}
	case err == nil && cp != nil:
		l.witness.Write(ctx, cp, l.chain.Len()) // committed: only now may it leave the state directory
	}
	return err
}

// openWitness opens the configured witness with the store's newest
// checkpoint.
func (b *Broker) openWitness(ctx context.Context) (*witness.Witness, error) {
	latest, err := b.j.LatestCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	return witness.Open(ctx, b.cfg.Witness, b.dirs.Root, b.rlog.keys.Public(), latest, b.j, b.cfg.Logf)
}

// Keys returns the broker's receipt keys: the signing key, and the output
// HMAC key that every stream recorder needs (Keys().MACKey()).
func (b *Broker) Keys() *receipt.Keys { return b.rlog.keys }

// SealReceipt assigns r an id if it has none, seals it with its streams
// into the chain, and stores the signed entry, its retained body and its
// link to the action (r.Action) in one fsync'd transaction with a new
// checkpoint. An action has at most one receipt. The action's state is
// left as it is; finishWithReceipt also records the outcome.
func (b *Broker) SealReceipt(ctx context.Context, r *receipt.Receipt, streams ...*receipt.Captured) (string, error) {
	return b.sealReceipt(ctx, nil, r, streams)
}

// finishWithReceipt records how an action ended (as Journal.Finish) and
// its receipt (as SealReceipt) in one transaction, so a terminal status
// always carries its receipt id and no receipt exists for an action still
// in flight. res.ReceiptID is set to the receipt's id.
func (b *Broker) finishWithReceipt(ctx context.Context, res *wire.Result, r *receipt.Receipt, streams ...*receipt.Captured) (string, error) {
	defer b.notify()
	return b.sealReceipt(ctx, res, r, streams)
}

func (b *Broker) sealReceipt(ctx context.Context, res *wire.Result, r *receipt.Receipt, streams []*receipt.Captured) (string, error) {
	if r.ID == "" {
		r.ID = journal.NewID("r-")
	}
	err := b.appendLog(ctx, func(tx *journal.LogTx, c *receipt.Chain) (bool, error) {
		var err error
		if res != nil {
			res.ReceiptID = r.ID
			err = tx.Finish(r.Action, res, r.ID) // the end and the link to the receipt
		} else {
			err = tx.LinkReceipt(r.Action, r.ID)
		}
		if err != nil {
			return false, err
		}
		e, err := c.Seal(r, streams...)
		if err != nil {
			return false, err
		}
		return true, tx.AppendEntry(e, r.ID, r.Action)
	})
	if err != nil {
		if res != nil {
			res.ReceiptID = "" // nothing was stored
		}
		return "", fmt.Errorf("seal receipt: %w", err)
	}
	return r.ID, nil
}

// PruneReceipts deletes the retained output bodies of receipts issued
// before cutoff, keeping the receipts (with their digests and counters),
// and appends a signed deletion record naming them under policy, all in
// one transaction. It returns the log indexes whose bodies were deleted
// and the deletion record's index, or no indexes when nothing was due.
func (b *Broker) PruneReceipts(ctx context.Context, cutoff time.Time, policy string) (pruned []int64, record int64, err error) {
	err = b.appendLog(ctx, func(tx *journal.LogTx, c *receipt.Chain) (bool, error) {
		entries, err := tx.Entries()
		if err != nil {
			return false, err
		}
		rec, idx, ok, err := c.Prune(entries, cutoff, policy, b.Stamp(b.cfg.Now()))
		if err != nil || !ok {
			return false, err
		}
		for _, i := range idx {
			if err := tx.DropBody(i); err != nil {
				return false, err
			}
		}
		pruned, record = idx, rec.Index
		return true, tx.AppendEntry(rec, "", "")
	})
	if err != nil {
		return nil, 0, fmt.Errorf("prune receipts: %w", err)
	}
	return pruned, record, nil
}
