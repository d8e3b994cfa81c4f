package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"warrant/broker/internal/journal"
	"warrant/receipt"
)

// A Witness is the open witness file of a running broker (the package
// doc).
type Witness struct {
	path string
	j    *journal.Journal
	logf func(string, ...any)

	mu     sync.Mutex
	f      *os.File
	failed bool // the last write failed
}

// File is the witness file's name for the log signed by pub.
func File(pub ed25519.PublicKey) string {
	return "receipt-checkpoints-" + receipt.KeyID(pub)[:16] + ".notes"
}

// Open opens (creating it) the witness file in dir, refuses a dir
// inside the state directory root, and copies latest (the store's newest
// checkpoint, nil for an empty log) when the file does not end with it,
// so that the witness holds the newest checkpoint from the start.
func Open(ctx context.Context, dir, root string, pub ed25519.PublicKey, latest []byte,
	j *journal.Journal, logf func(string, ...any)) (*Witness, error) {
	real, err := dirOf(dir, root)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(real, File(pub))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("witness: open %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("witness: %s is not a regular file", path)
	}
	w := &Witness{path: path, j: j, logf: logf, f: f}
	last, err := LastNote(path)
	if err != nil {
		f.Close()
		return nil, err
	}
	size := int64(0)
	if latest != nil {
		if size, err = CheckpointSize(latest, pub); err != nil {
			f.Close()
			return nil, err
		}
	}
	if latest != nil && !bytes.Equal(last, latest) {
		if err := w.append(latest); err != nil {
			f.Close()
			return nil, fmt.Errorf("witness: %w", err)
		}
	}
	if err := j.SaveWitnessReport(ctx, journal.WitnessReport{Path: path, Size: size}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// dirOf resolves dir, which must be an existing directory outside
// the state directory root (symbolic links resolved in both).
func dirOf(dir, root string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return "", fmt.Errorf("witness: %w (the directory must exist)", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("witness: %s is not a directory", dir)
	}
	state, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("witness: %w", err)
	}
	if rel, err := filepath.Rel(state, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("witness: %s is inside the state directory %s; a witness must be kept where whoever rewrites the state directory cannot reach it", dir, state)
	}
	return real, nil
}

// CheckpointSize is the log size a checkpoint signed by pub covers.
func CheckpointSize(note []byte, pub ed25519.PublicKey) (int64, error) {
	t, err := receipt.OpenCheckpoint(note, pub)
	if err != nil {
		return 0, fmt.Errorf("witness: the newest stored checkpoint: %w", err)
	}
	return t.N, nil
}

// LastNote returns the last checkpoint in the witness file at path, or
// nil when it holds none. It reads only the file's tail.
func LastNote(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	defer f.Close()
	const tail = 4096 // a checkpoint is under 200 bytes
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	off := max(fi.Size()-tail, 0)
	buf := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("witness: read %s: %w", path, err)
	}
	// Each note ends with its signature line and an empty line.
	body, ok := bytes.CutSuffix(buf, []byte("\n\n"))
	if !ok {
		return nil, nil
	}
	i := bytes.LastIndex(body, []byte("\n\n"))
	j := bytes.LastIndex(body[:max(i, 0)], []byte("\n\n"))
	switch {
	case i < 0 || (j < 0 && off > 0):
		return nil, nil // no whole note in the tail
	case j < 0:
		return append(body, '\n'), nil // the file holds one note
	}
	return append(body[j+2:], '\n'), nil
}

// Write copies one checkpoint of size entries, after its transaction
// committed; a failure is logged and recorded, never returned. A nil w
// (no witness configured) writes nothing.
func (w *Witness) Write(ctx context.Context, note []byte, size int64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.append(note)
	if err != nil {
		w.logf("witness: the checkpoint of %d entries was not copied to %s: %v", size, w.path, err)
	}
	if (err != nil) == w.failed {
		return // no change to report
	}
	w.failed = err != nil
	r := journal.WitnessReport{Path: w.path, Size: size}
	if err != nil {
		r.Error = err.Error()
	}
	if err := w.j.SaveWitnessReport(ctx, r); err != nil {
		w.logf("witness: %v", err)
	}
}

// append writes note and its separating empty line in one write, then
// fsyncs.
func (w *Witness) append(note []byte) error {
	if _, err := w.f.Write(append(append([]byte(nil), note...), '\n')); err != nil {
		return err
	}
	return w.f.Sync()
}

// Close closes the file; a nil w is none.
func (w *Witness) Close() {
	if w != nil {
		w.f.Close()
	}
}
