package goals

import (
	"fmt"
	"strings"
	"testing"

	"warrant/receipt"
)

// BenchmarkGoalVerify20x100 is the oracle's cost for a goal of 20 steps
// (a chain: each depends on the one before; each asks for one receipt
// and one file) judged from a log of 100 receipts, each op verifying the
// whole log afresh (a new Verifier: no memo) and evaluating the goal;
// beside it, in the same run, the verification `broker receipts verify`
// makes of the same log (a new Verifier, the log checkpointed on every
// append), the baseline. It reports both ns/op and their ratio.
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
	var verify float64                           // ns/op of the baseline, measured first
	b.Run("receipts-verify", func(b *testing.B) {
		for b.Loop() {
			if rep := receipt.NewVerifier(f.keys.Public()).Verify(f.entries, cps, logged); !rep.OK() {
				b.Fatal(rep.Problems)
			}
		}
		verify = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	judge := func(b *testing.B, v *receipt.Verifier) {
		_, ev := v.Evidence(f.entries, cps, logged)
		if v := Evaluate(Input{Goal: "g1", Revision: 1, Spec: spec, Digest: digest, Evidence: ev, Read: read}); !v.Done {
			b.Fatalf("not done: %+v", v.Steps[0])
		}
	}
	report := func(b *testing.B) {
		b.ReportMetric(verify, "verify-ns/op")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/verify, "oracle/verify")
	}
	b.Run("oracle", func(b *testing.B) {
		for b.Loop() {
			judge(b, receipt.NewVerifier(f.keys.Public()))
		}
		report(b)
	})
	// The broker keeps one Verifier: entries it has checked are not
	// checked again (receipt.Verifier's memo).
	b.Run("oracle-warm", func(b *testing.B) {
		v := receipt.NewVerifier(f.keys.Public())
		v.Verify(f.entries, cps, logged)
		for b.Loop() {
			judge(b, v)
		}
		report(b)
	})
}
