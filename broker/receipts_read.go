package broker

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"warrant/broker/internal/journal"
	"warrant/broker/internal/probe"
	"warrant/receipt"
)

// ReceiptLog is a consistent snapshot of a state directory's receipt log,
// read without the state lock, for verification and display.
type ReceiptLog struct {
	Entries     []receipt.Entry
	Checkpoints [][]byte          // signed notes, oldest first
	Public      ed25519.PublicKey // from keys/, never from the journal
}

// Verify checks the snapshot under the state directory's own key.
func (l *ReceiptLog) Verify() *receipt.Report {
	return receipt.Verify(l.Entries, l.Checkpoints, l.Public)
}

// ReadReceiptLog reads the receipt log of the state directory root. It
// opens the journal read-only and takes no lock, so it works beside a
// running broker; SQLite's WAL gives it one consistent snapshot of the
// entries and checkpoints. The public key comes from keys/ (never from
// the journal, which a tamperer could rewrite); nothing is created.
func ReadReceiptLog(ctx context.Context, root string) (*ReceiptLog, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	keys, err := existingKeys(abs)
	if err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	j, err := journal.OpenReadOnly(layout(abs).journal)
	if err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	defer j.Close()
	l := &ReceiptLog{Public: keys.Public()}
	if l.Entries, l.Checkpoints, err = j.ReceiptLog(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// ReadCapability returns the capability report last stored in the state
// directory root (by a broker's start or `broker probe`), read-only; nil
// when there is none or no broker has run there.
func ReadCapability(ctx context.Context, root string) (*probe.Report, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("read capability: %w", err)
	}
	j, err := journal.OpenReadOnly(layout(abs).journal)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no broker has run here
	}
	if err != nil {
		return nil, fmt.Errorf("read capability: %w", err)
	}
	defer j.Close()
	return storedReport(ctx, j)
}

// storedReport decodes the journal's last capability report, or nil.
func storedReport(ctx context.Context, j *journal.Journal) (*probe.Report, error) {
	raw, key, err := j.LatestCapabilityReport(ctx)
	if err != nil || raw == nil {
		return nil, err
	}
	r := &probe.Report{}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("read capability report: %w", err)
	}
	if r.Binding.Key() != key {
		return nil, fmt.Errorf("read capability report: its binding does not match its key")
	}
	return r, nil
}
