package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"warrant/receipt"
)

// sealHeld seals an unknown receipt for one more held action, as a broker
// restart would: one append, one checkpoint.
func (r *rig) sealHeld() {
	r.t.Helper()
	ctx := context.Background()
	r.wantAccepted(r.request())
	_, err := r.b.j.RecoverInterrupted(ctx)
	must(r.t, err)
	must(r.t, r.b.sealUnknownReceipts(ctx))
}

// A witness write that fails does not block the append: it is logged,
// recorded and reported by ReadWitness (what `broker status` prints), and
// the next write that succeeds copies the newest checkpoint.
func TestWitnessWriteFailure(t *testing.T) {
	wdir := t.TempDir()
	var mu sync.Mutex
	var logged []string
	r := newRig(t, func(c *Config) {
		c.Witness = wdir
		c.Logf = func(f string, a ...any) { mu.Lock(); logged = append(logged, f); mu.Unlock() }
	})
	ctx := context.Background()
	r.approved(r.request(), 10)
	r.sealHeld()
	w := r.b.rlog.witness
	file := filepath.Join(wdir, WitnessFile(r.b.Keys().Public()))
	status := func() *WitnessStatus {
		t.Helper()
		s, err := ReadWitness(ctx, r.state)
		must(t, err)
		if s == nil || s.Path != file {
			t.Fatalf("witness status %+v, want path %s", s, file)
		}
		return s
	}
	if s := status(); s.Failing || s.FileSize != 1 || s.LogSize != 1 {
		t.Fatalf("after one append: %+v", s)
	}
	writable := w.f
	ro, err := os.Open(file) // writes to it fail with EBADF
	must(t, err)
	defer ro.Close()
	w.f = ro
	r.sealHeld()
	if s := status(); !s.Failing || !strings.Contains(s.Error, "bad file descriptor") || s.FileSize != 1 || s.LogSize != 2 {
		t.Fatalf("after a failed write: %+v", s)
	}
	w.f = writable
	r.sealHeld()
	if s := status(); s.Failing || s.FileSize != 3 || s.LogSize != 3 {
		t.Fatalf("after the witness recovered: %+v", s)
	}
	raw, err := os.ReadFile(file)
	must(t, err)
	notes, err := receipt.ParseCheckpoints(raw)
	must(t, err)
	if len(notes) != 2 {
		t.Fatalf("witness holds %d checkpoints, want those of 1 and 3 entries:\n%s", len(notes), raw)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, l := range logged {
		found = found || strings.HasPrefix(l, "witness: the checkpoint of %d entries was not copied")
	}
	if !found {
		t.Fatalf("the failure was not logged: %q", logged)
	}
}

// BenchmarkWitnessWrite measures what a witness adds to each append: one
// write(2) of the checkpoint and an fsync of the witness file. Beside it,
// in the same run and on the same filesystem, it measures a bare
// single-row INSERT committed with synchronous=FULL, the floor of the
// append's own journal transaction.
func BenchmarkWitnessWrite(b *testing.B) {
	r := newRigTB(b, true, func(c *Config) { c.Witness = b.TempDir() })
	ctx := context.Background()
	r.approved(r.request(), 10)
	r.sealHeld()
	note, err := r.b.j.LatestCheckpoint(ctx)
	must(b, err)
	w := r.b.rlog.witness
	bare := bareCommitter(b, filepath.Join(b.TempDir(), "bare.db"))
	var ours, floor time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		w.write(ctx, note, 1)
		t1 := time.Now()
		if err := bare(i); err != nil {
			b.Fatal(err)
		}
		ours, floor = ours+t1.Sub(t0), floor+time.Since(t1)
	}
	b.StopTimer()
	if w.failed {
		b.Fatal("a witness write failed")
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours.Microseconds())/n, "witness-µs")
	b.ReportMetric(float64(floor.Microseconds())/n, "bare-commit-µs")
	b.ReportMetric(float64(ours)/float64(floor), "ratio")
}
