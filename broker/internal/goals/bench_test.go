package goals

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"warrant/receipt"
)

// BenchmarkGoalVerify20x100 is the oracle's cost for a goal of 20 steps
// (a chain: each depends on the one before; each asks for one receipt
// and one file) judged from a log of 100 receipts: verifying the whole
// log (cold: a new Verifier, no memo; warm: the broker's Verifier, which
// has seen the entries) and evaluating the goal. Beside it, in the same
// iterations, the baseline: the verification `broker receipts verify`
// makes of the same log (a new Verifier, the log checkpointed on every
// append). It reports both ns/op and their ratio.
func BenchmarkGoalVerify20x100(b *testing.B) {
	f := newFixture(b)
	var steps []string
	for s := range 20 {
		dep := ""
		if s > 0 {
			dep = fmt.Sprintf(`"depends_on":["s%d"],`, s-1)
		}
		steps = append(steps, fmt.Sprintf(`{"id":"s%d",%s"criteria":[{"kind":"receipt","command":{"executable":"make","argv":["s%d"]}},`+
			`{"kind":"file","path":"out/s%d","contains":"ok"}]}`, s, dep, s, s))
	}
	spec, err := Decode(`{"title":"bench","workspace":"`+ws+`","steps":[`+strings.Join(steps, ",")+`]}`, "")
	must(b, err)
	files := map[string]string{}
	for i := range 100 {
		s := i % 20
		f.seal(exited(fmt.Sprintf("r%03d", i), "g1", 1, fmt.Sprintf("s%d", s), "make", []string{fmt.Sprintf("s%d", s)}, 0))
		files[fmt.Sprintf("out/s%d", s)] = "ok\n"
	}
	cp, err := f.chain.Checkpoint()
	must(b, err)
	cps := [][]byte{cp}
	read := mapReader(files)
	digest := Digest(spec.Encode())

	logged := receipt.Expect{Checkpointed: true} // as the broker verifies its own log
	judge := func(b *testing.B, v *receipt.Verifier) {
		_, ev := v.Evidence(f.entries, cps, logged)
		if v := Evaluate(Input{Goal: "g1", Revision: 1, Spec: spec, Digest: digest, Evidence: ev, Read: read}); !v.Done {
			b.Fatalf("not done: %+v", v.Steps[0])
		}
	}
	// Each iteration times the baseline and then the oracle, so both see
	// the same machine at the same moment; the benchmark's own ns/op is
	// their sum.
	run := func(b *testing.B, oracle func(b *testing.B)) {
		var base, judged time.Duration
		for b.Loop() {
			t0 := time.Now()
			if rep := receipt.NewVerifier(f.keys.Public()).Verify(f.entries, cps, logged); !rep.OK() {
				b.Fatal(rep.Problems)
			}
			t1 := time.Now()
			oracle(b)
			base, judged = base+t1.Sub(t0), judged+time.Since(t1)
		}
		n := float64(b.N)
		b.ReportMetric(float64(base.Nanoseconds())/n, "verify-ns/op")
		b.ReportMetric(float64(judged.Nanoseconds())/n, "oracle-ns/op")
		b.ReportMetric(float64(judged)/float64(base), "oracle/verify")
	}
	b.Run("cold", func(b *testing.B) { run(b, func(b *testing.B) { judge(b, receipt.NewVerifier(f.keys.Public())) }) })
	// The broker keeps one Verifier: entries it has checked are not
	// checked again (receipt.Verifier's memo).
	b.Run("warm", func(b *testing.B) {
		v := receipt.NewVerifier(f.keys.Public())
		v.Verify(f.entries, cps, logged)
		run(b, func(b *testing.B) { judge(b, v) })
	})
}
