package witness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"warrant/broker/internal/journal"
	"warrant/receipt"
)

// TestWriteFailure: a witness write that fails does not block the
// append: it is logged and recorded in the journal's witness reports
// (what `broker status` prints), and the next write that succeeds copies
// the newest checkpoint; the file holds exactly the notes written.
func TestWriteFailure(t *testing.T) {
	ctx := context.Background()
	state, wdir := t.TempDir(), t.TempDir()
	j, err := journal.Open(ctx, filepath.Join(state, "journal.db"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	keys, err := receipt.LoadOrCreateKeys(filepath.Join(state, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged []string
	logf := func(f string, a ...any) { mu.Lock(); logged = append(logged, fmt.Sprintf(f, a...)); mu.Unlock() }
	w, err := Open(ctx, wdir, state, keys.Public(), nil, j, logf)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	file := filepath.Join(wdir, File(keys.Public()))
	report := func() journal.WitnessReport {
		t.Helper()
		r, err := j.LatestWitnessReport(ctx)
		if err != nil || r == nil || r.Path != file {
			t.Fatalf("witness report %+v, %v; want one for %s", r, err, file)
		}
		return *r
	}
	note := func(n int) []byte { return fmt.Appendf(nil, "warrant\n%d\nhash\n\n— sig\n", n) }

	w.Write(ctx, note(1), 1)
	if r := report(); r.Error != "" {
		t.Fatalf("after a write: %+v", r)
	}
	writable := w.f
	ro, err := os.Open(file) // writes to it fail with EBADF
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	w.f = ro
	w.Write(ctx, note(2), 2)
	if r := report(); !strings.Contains(r.Error, "bad file descriptor") || r.Size != 2 {
		t.Fatalf("after a failed write: %+v", r)
	}
	w.f = writable
	w.Write(ctx, note(3), 3)
	if r := report(); r.Error != "" || r.Size != 3 {
		t.Fatalf("after the witness recovered: %+v", r)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := string(note(1)) + "\n" + string(note(3)) + "\n"; string(raw) != want {
		t.Fatalf("witness holds %q, want the notes of 1 and 3 entries: %q", raw, want)
	}
	if last, err := LastNote(file); err != nil || string(last) != string(note(3)) {
		t.Fatalf("last note %q, %v", last, err)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, l := range logged {
		found = found || strings.HasPrefix(l, "witness: the checkpoint of 2 entries was not copied to "+file)
	}
	if !found {
		t.Fatalf("the failure was not logged: %q", logged)
	}
}
