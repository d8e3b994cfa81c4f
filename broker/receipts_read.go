package broker

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"warrant/receipt"
)

// receiptSchema is the first journal schema version with the receipt log.
const receiptSchema = 2

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
	db, err := openReadOnly(abs)
	if err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version); err != nil {
		return nil, fmt.Errorf("read receipt log: schema version: %w", err)
	}
	if version < receiptSchema {
		return nil, fmt.Errorf("read receipt log: journal schema %d predates receipts; start the broker once to migrate it", version)
	}
	l := &ReceiptLog{Public: keys.Public()}
	if l.Entries, err = readEntries(ctx, tx); err != nil {
		return nil, err
	}
	if l.Checkpoints, err = readCheckpoints(ctx, tx); err != nil {
		return nil, err
	}
	return l, nil
}

// openReadOnly opens the journal of the state directory root read-only.
// It takes no lock and creates nothing, so it works beside a running
// broker; SQLite's WAL gives each transaction one consistent snapshot.
func openReadOnly(root string) (*sql.DB, error) {
	path := layout(root).journal
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// ReadCapability returns the capability report last stored in the state
// directory root (by a broker's start or `broker probe`), read-only; nil
// when there is none or no broker has run there.
func ReadCapability(ctx context.Context, root string) (*CapabilityReport, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("read capability: %w", err)
	}
	db, err := openReadOnly(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no broker has run here
	}
	if err != nil {
		return nil, fmt.Errorf("read capability: %w", err)
	}
	defer db.Close()
	return (&Journal{db: db}).LatestCapabilityReport(ctx)
}
