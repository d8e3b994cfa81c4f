package broker

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

// A witness is an append-only file outside the state directory to which
// the broker copies every signed checkpoint after the transaction that
// stored it commits (`broker serve --witness DIR`). Whoever can rewrite
// the state directory can cut the log and its checkpoints together; the
// witness file keeps the checkpoints where `broker receipts verify
// --checkpoint FILE` can hold the log to them.
//
// The file is DIR/WitnessFile(key): checkpoints of one key only, each a
// signed note followed by an empty line, written with one write(2) on a
// descriptor opened O_APPEND|O_NOFOLLOW and fsync'd. Its mode is 0644:
// checkpoints are meant to be published, and hold no secret. O_APPEND
// stops no one with the broker's uid from truncating the file; to make
// it append-only for the broker too, the operator sets it so (`chattr +a`
// on Linux, `chflags sappnd` on macOS, both as root) or points DIR at storage the
// broker's uid cannot rewrite.
//
// A DIR inside the state directory, one that does not exist, or a file
// that cannot be opened or brought up to date at start stops Open. A failed write does not block the append whose checkpoint it
// copies (the journal already holds that checkpoint, committed): it is
// logged, recorded in the journal's witness reports, and shown by
// `broker status`. The next write that succeeds copies the newest
// checkpoint, which covers every entry an earlier one did, so the
// witness loses only the intermediate sizes.
type witness struct {
	path string
	j    *journal.Journal
	logf func(string, ...any)

	mu     sync.Mutex
	f      *os.File
	failed bool // the last write failed
}

// WitnessFile is the witness file's name for the log signed by pub.
func WitnessFile(pub ed25519.PublicKey) string {
	return "receipt-checkpoints-" + receipt.KeyID(pub)[:16] + ".notes"
}

// openWitness opens (creating it) the witness file in dir, refuses a dir
// inside the state directory root, and copies latest (the store's newest
// checkpoint, nil for an empty log) when the file does not end with it,
// so that the witness holds the newest checkpoint from the start.
func openWitness(ctx context.Context, dir, root string, pub ed25519.PublicKey, latest []byte,
	j *journal.Journal, logf func(string, ...any)) (*witness, error) {
	real, err := witnessDir(dir, root)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(real, WitnessFile(pub))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("witness: open %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("witness: %s is not a regular file", path)
	}
	w := &witness{path: path, j: j, logf: logf, f: f}
	last, err := lastNote(path)
	if err != nil {
		f.Close()
		return nil, err
	}
	size := int64(0)
	if latest != nil {
		if size, err = checkpointSize(latest, pub); err != nil {
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

// witnessDir resolves dir, which must be an existing directory outside
// the state directory root (symbolic links resolved in both).
func witnessDir(dir, root string) (string, error) {
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

// checkpointSize is the log size a checkpoint signed by pub covers.
func checkpointSize(note []byte, pub ed25519.PublicKey) (int64, error) {
	t, err := receipt.OpenCheckpoint(note, pub)
	if err != nil {
		return 0, fmt.Errorf("witness: the newest stored checkpoint: %w", err)
	}
	return t.N, nil
}

// lastNote returns the last checkpoint in the witness file at path, or
// nil when it holds none. It reads only the file's tail.
func lastNote(path string) ([]byte, error) {
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

// write copies one checkpoint of size entries, after its transaction
// committed; a failure is logged and recorded, never returned.
func (w *witness) write(ctx context.Context, note []byte, size int64) {
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
func (w *witness) append(note []byte) error {
	if _, err := w.f.Write(append(append([]byte(nil), note...), '\n')); err != nil {
		return err
	}
	return w.f.Sync()
}

func (w *witness) close() {
	if w != nil {
		w.f.Close()
	}
}
