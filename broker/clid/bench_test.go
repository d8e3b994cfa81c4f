package clid

import (
	"bytes"
	"context"
	"testing"
	"time"

	"warrant/broker"
	"warrant/receipt"
)

// BenchmarkReceiptsVerify100 measures `broker receipts verify --pubkey
// --checkpoint` of a log of 100 receipts sealed by a real broker: reading
// the journal (entries, 100 checkpoints, the actions' receipt ids), every
// signature, chain link, body and checkpoint, the outside checkpoint and
// the cross-check of the actions' receipt ids. Beside it, in the same
// run, it times the in-memory verification of the same snapshot alone
// (receipt.Verifier, cold) and the read alone, so the figure can be set
// beside other costs over the same log.
func BenchmarkReceiptsVerify100(b *testing.B) {
	r := newStateRig(b)
	for range 100 {
		r.run()
	}
	pub, cp := r.keep()
	l, err := broker.ReadReceiptLog(context.Background(), r.state)
	must(b, err)
	if rep := l.Verify(); !rep.OK() || rep.Receipts != 100 {
		b.Fatalf("the log does not verify: %+v", rep)
	}
	var read, verify time.Duration
	b.ResetTimer()
	for b.Loop() {
		var out, errs bytes.Buffer
		if code := Main([]string{"receipts", "verify", "--pubkey", pub, "--checkpoint", cp, "--state", r.state}, &out, &errs); code != 0 {
			b.Fatalf("verify: %d\n%s%s", code, out.String(), errs.String())
		}
		b.StopTimer()
		t0 := time.Now()
		l, err := broker.ReadReceiptLog(context.Background(), r.state)
		t1 := time.Now()
		must(b, err)
		if rep := receipt.NewVerifier(l.Public).Verify(l.Entries, l.Checkpoints, receipt.Expect{Checkpointed: true, Receipts: l.Named}); !rep.OK() {
			b.Fatal("the snapshot does not verify")
		}
		read, verify = read+t1.Sub(t0), verify+time.Since(t1)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(read.Nanoseconds())/n, "read-only-ns")
	b.ReportMetric(float64(verify.Nanoseconds())/n, "verify-only-ns")
	b.ReportMetric(float64(verify.Nanoseconds())/n/100, "verify-ns/receipt")
}
