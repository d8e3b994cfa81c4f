package broker

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"warrant/broker/internal/journal"
	"warrant/wire"
)

// BenchmarkAdmitAndCheckpoint measures the decision path of one approved
// action in process: admission, identity (fd opens, fstat, SHA-256 of the
// executable), the snapshot cache (warm), the exact lease match and the
// fsync'd EXECUTING checkpoint. Beside it, in the same run, it measures a
// bare single-row INSERT committed with synchronous=FULL on the same
// filesystem: the floor any durable checkpoint pays. It reports p50 and
// p99 of both, and their ratio.
func BenchmarkAdmitAndCheckpoint(b *testing.B) {
	r := newRigTB(b, true)
	ctx := context.Background()
	req := r.request()
	_, lease := r.approved(req, journal.MaxLeaseUses)
	r.wantAccepted(req) // warms the snapshot cache
	s := &wire.Submit{Workspace: r.workspace, Request: req}
	bare := bareCommitter(b, filepath.Join(b.TempDir(), "bare.db"))

	var ours, floor []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%(journal.MaxLeaseUses-2) == journal.MaxLeaseUses-3 { // two uses left: revoke the lease so that the next submit asks anew
			b.StopTimer()
			must(b, r.b.j.Revoke(ctx, lease.ID))
			_, lease = r.approved(req, journal.MaxLeaseUses)
			b.StartTimer()
		}
		t0 := time.Now()
		m, err := r.b.Submit(ctx, s)
		if err != nil || m.Type() != wire.TypeAccepted {
			b.Fatalf("submit: %v %v", m, err)
		}
		t1 := time.Now()
		if err := bare(i); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, time.Since(t1))
		ours = append(ours, t1.Sub(t0))
	}
	b.StopTimer()
	p := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[int(q*float64(len(d)-1))].Microseconds())
	}
	b.ReportMetric(p(ours, 0.50), "p50-µs")
	b.ReportMetric(p(ours, 0.99), "p99-µs")
	b.ReportMetric(p(floor, 0.50), "bare-commit-p50-µs")
	b.ReportMetric(p(floor, 0.99), "bare-commit-p99-µs")
	b.ReportMetric(p(ours, 0.50)/max(p(floor, 0.50), 1), "p50-ratio")
}

// bareCommitter opens a separate database (not a journal) with the
// journal's durability settings and returns a one-row committed INSERT.
func bareCommitter(tb testing.TB, path string) func(v int) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	must(tb, err)
	tb.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	_, err = db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)`)
	must(tb, err)
	return func(v int) error {
		_, err := db.Exec(`INSERT INTO t (v) VALUES (?)`, v)
		return err
	}
}
