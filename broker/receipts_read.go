package broker

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"warrant/broker/internal/journal"
	"warrant/broker/internal/probe"
	"warrant/broker/internal/statedir"
	"warrant/broker/internal/witness"
	"warrant/receipt"
)

// ReceiptLog is a consistent snapshot of a state directory's receipt log,
// read without the state lock, for verification and display.
type ReceiptLog struct {
	Entries     []receipt.Entry
	Checkpoints [][]byte          // signed notes, oldest first
	Named       map[string]string // receipt id → the action (in the journal) naming it
	Public      ed25519.PublicKey // from keys/, never from the journal
}

// Verify checks the snapshot under the state directory's own key, as a
// log checkpointed on every append, against the receipt ids the actions
// name.
func (l *ReceiptLog) Verify() *receipt.Report {
	return l.VerifyAnchored(nil, nil)
}

// VerifyAnchored is Verify held to what an operator kept outside the
// state directory: their copy of the public key (nil: trust keys/), and
// checkpoints the log must extend.
func (l *ReceiptLog) VerifyAnchored(pub ed25519.PublicKey, anchors [][]byte) *receipt.Report {
	x := receipt.Expect{Checkpointed: true, Receipts: l.Named, Anchors: anchors}
	if pub == nil {
		pub = l.Public
	} else {
		x.StoredKey = l.Public
	}
	return receipt.NewVerifier(pub).Verify(l.Entries, l.Checkpoints, x)
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
	keys, err := statedir.ExistingKeys(abs)
	if err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	j, err := journal.OpenReadOnly(statedir.Layout(abs).Journal)
	if err != nil {
		return nil, fmt.Errorf("read receipt log: %w", err)
	}
	defer j.Close()
	s, err := j.ReceiptLog(ctx)
	if err != nil {
		return nil, err
	}
	return &ReceiptLog{Entries: s.Entries, Checkpoints: s.Checkpoints, Named: s.Named, Public: keys.Public()}, nil
}

// ReadCapability returns the capability report last stored in the state
// directory root (by a broker's start or `broker probe`), read-only; nil
// when there is none or no broker has run there.
func ReadCapability(ctx context.Context, root string) (*probe.Report, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("read capability: %w", err)
	}
	j, err := journal.OpenReadOnly(statedir.Layout(abs).Journal)
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

// WitnessFile is the witness file's name for the log signed by pub
// (broker/internal/witness).
func WitnessFile(pub ed25519.PublicKey) string { return witness.File(pub) }

// WitnessStatus is what `broker status` says of the witness: the last
// witness report a broker recorded, and what the witness file and the
// journal hold now.
type WitnessStatus struct {
	Path      string
	Failing   bool      // the last recorded write failed
	Error     string    // its error
	Reported  time.Time // when the broker recorded it
	LogSize   int64     // entries the journal's newest checkpoint covers
	FileSize  int64     // entries the witness file's last checkpoint covers
	FileError string    // the witness file could not be read, or its last checkpoint does not verify
}

// ReadWitness reads the witness state of the state directory root,
// read-only: nil when no broker has served there with a witness.
func ReadWitness(ctx context.Context, root string) (*WitnessStatus, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("read witness: %w", err)
	}
	j, err := journal.OpenReadOnly(statedir.Layout(abs).Journal)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read witness: %w", err)
	}
	defer j.Close()
	r, err := j.LatestWitnessReport(ctx)
	if err != nil || r == nil {
		return nil, err
	}
	keys, err := statedir.ExistingKeys(abs)
	if err != nil {
		return nil, fmt.Errorf("read witness: %w", err)
	}
	w := &WitnessStatus{Path: r.Path, Failing: r.Error != "", Error: r.Error, Reported: r.At}
	latest, err := j.LatestCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	if latest != nil {
		if w.LogSize, err = witness.CheckpointSize(latest, keys.Public()); err != nil {
			return nil, err
		}
	}
	last, err := witness.LastNote(r.Path)
	if err == nil && last != nil {
		var t tlog.Tree
		t, err = receipt.OpenCheckpoint(last, keys.Public())
		w.FileSize = t.N
	}
	if err != nil {
		w.FileError = err.Error()
	}
	return w, nil
}
