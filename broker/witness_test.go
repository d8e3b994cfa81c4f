package broker

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestWitnessStatus: ReadWitness (what `broker status` prints) compares
// the witness file with the log: after an append the file holds the
// newest checkpoint; a file cut behind the broker's back lags, and the
// next append brings it up to date. A write that fails (the file as
// large as its filesystem allows) is shown failing, with its error,
// until a write succeeds again (how the witness records it:
// broker/internal/witness TestWriteFailure).
func TestWitnessStatus(t *testing.T) {
	wdir := t.TempDir()
	r := newRig(t, func(c *Config) { c.Witness = wdir })
	file := filepath.Join(wdir, WitnessFile(r.b.Keys().Public()))
	want := func(inFile, inLog int64) {
		t.Helper()
		s, err := ReadWitness(context.Background(), r.state)
		must(t, err)
		if s == nil || s.Path != file || s.Failing || s.FileError != "" || s.FileSize != inFile || s.LogSize != inLog {
			t.Fatalf("witness status %+v, want %s holding %d of %d entries", s, file, inFile, inLog)
		}
	}
	r.approved(r.request(), 10)
	r.sealHeld()
	want(1, 1)
	must(t, os.Truncate(file, 0))
	want(0, 1)
	r.sealHeld()
	want(2, 2)

	atMaxSize(t, file)
	r.sealHeld()
	s, err := ReadWitness(context.Background(), r.state)
	must(t, err)
	if s == nil || !s.Failing || !strings.Contains(s.Error, "file too large") || s.LogSize != 3 {
		t.Fatalf("witness status after a failed write: %+v; want failing, saying file too large, the log at 3", s)
	}
	must(t, os.Truncate(file, 0))
	r.sealHeld()
	want(4, 4)
}

// atMaxSize makes file (sparse) as large as its filesystem allows: an
// append to it then fails with EFBIG, whoever writes it.
func atMaxSize(t *testing.T, file string) {
	t.Helper()
	lo, hi := int64(0), int64(math.MaxInt64)
	for lo < hi {
		if mid := lo + (hi-lo)/2 + 1; os.Truncate(file, mid) == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	must(t, os.Truncate(file, lo))
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
		w.Write(ctx, note, 1)
		t1 := time.Now()
		if err := bare(i); err != nil {
			b.Fatal(err)
		}
		ours, floor = ours+t1.Sub(t0), floor+time.Since(t1)
	}
	b.StopTimer()
	if s, err := ReadWitness(ctx, r.state); err != nil || s == nil || s.Failing {
		b.Fatalf("a witness write failed: %+v, %v", s, err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours.Microseconds())/n, "witness-µs")
	b.ReportMetric(float64(floor.Microseconds())/n, "bare-commit-µs")
	b.ReportMetric(float64(ours)/float64(floor), "ratio")
}
