//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"warrant/wire"
)

// quantile returns the q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// BenchmarkRunTrue measures an existing lease → a terminal state with its
// receipt sealed, for /bin/true, through a real daemon's sockets (submit,
// then wait), under each executable binding (the operator pins it at
// approval), beside a bare os/exec of /bin/true and bubblewrap starting
// /bin/true (bwrapArgs) in the same loop. Each of the three is timed
// from a quiet daemon (brokerd.Quiet): the work an action leaves behind
// it would otherwise share the two cores with the baseline timed next
// (on a host whose page faults are slow, bare os/exec took 8.6 ms right
// after an action against 3.7 ms after a pause).
func BenchmarkRunTrue(b *testing.B) {
	d := startBroker(b, "")
	for _, binding := range []wire.Binding{wire.SealedSnapshot, wire.InPlace} {
		b.Run(binding.String(), func(b *testing.B) { benchRun(b, d, binding, "true") })
	}
}

// BenchmarkRunTrueSpaced is BenchmarkRunTrue's sealed-snapshot chain
// with an idle pause of spacing (untimed) before each timed run, the
// chain's and the baselines' alike: what an agent that thinks between
// commands pays: after a pause the chain's threads and processes start
// cold, and before the launcher was born in its cgroups its cgroup v1
// placement waited for an RCU grace period (docs/architecture.md §2.5).
func BenchmarkRunTrueSpaced(b *testing.B) {
	d := startBroker(b, "")
	benchRunSpaced(b, d, wire.SealedSnapshot, spacing, "true")
}

// spacing is BenchmarkRunTrueSpaced's pause between runs.
const spacing = 50 * time.Millisecond

// bwrapArgs is bubblewrap's sandbox the chain is compared with: the host
// read-only, every namespace unshared, tied to its parent, a new session.
var bwrapArgs = []string{"--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--new-session"}

// bwrap returns the bubblewrap binary, or "" after logging why there is
// none (the comparison is then not made).
func bwrap(b *testing.B) string {
	p, err := exec.LookPath("bwrap")
	if err == nil {
		err = exec.Command(p, append(slices.Clone(bwrapArgs), "/bin/true")...).Run()
	}
	if err != nil {
		b.Logf("no bubblewrap comparison: %v (install the bubblewrap package)", err)
		return ""
	}
	return p
}

// BenchmarkCLIRunTrue is what a shell-driven agent pays: the whole
// `broker run --json -- /bin/true` process against a warm daemon, with an
// existing lease, beside bubblewrap starting /bin/true, in the same loop,
// each from a quiet daemon (brokerd.Quiet). The loop also times the
// start and exit of the smallest Go program (gofloor): the goal (1.5 ×
// bwrap) is within reach of a Go client beside a chain that meets its own
// (1.0 × bwrap) only where go-start-x-bwrap is at most 0.5.
func BenchmarkCLIRunTrue(b *testing.B) {
	d := startBroker(b, "")
	a := d.newAgent(b)
	a.Start(a.request(wire.ProfileShort, "/bin/true"), 10000) // the most uses a lease takes
	bw := bwrap(b)
	var cli, box, gostart []time.Duration
	for b.Loop() {
		quiet(b, d)
		t0 := time.Now()
		if err := exec.Command(bins.gofloor).Run(); err != nil {
			b.Fatal(err)
		}
		gostart = append(gostart, time.Since(t0))
		quiet(b, d)
		t0 = time.Now()
		cmd := exec.Command(bins.broker, "run", "--json", "--state", d.State, "--workspace", a.WS, "--", "/bin/true")
		if out, err := cmd.Output(); err != nil {
			b.Fatalf("broker run: %v\n%s", err, out)
		}
		cli = append(cli, time.Since(t0))
		if bw != "" {
			quiet(b, d)
			t0 = time.Now()
			if err := exec.Command(bw, append(slices.Clone(bwrapArgs), "/bin/true")...).Run(); err != nil {
				b.Fatal(err)
			}
			box = append(box, time.Since(t0))
		}
	}
	reportAgainst(b, "", cli, "bwrap", box)
	slices.Sort(gostart)
	g50 := quantile(gostart, 0.50)
	b.ReportMetric(float64(g50)/1e6, "go-start-p50-ms")
	if len(box) > 0 {
		slices.Sort(box)
		b.ReportMetric(float64(g50)/float64(quantile(box, 0.50)), "go-start-x-bwrap")
	}
}

// quiet is d.Quiet outside b's timer, so that its reads of /proc count in
// none of the figures b reports (B/op, allocs/op).
func quiet(b *testing.B, d *brokerd) {
	b.StopTimer()
	d.Quiet()
	b.StartTimer()
}

// reportAgainst reports the p50 and p95 of chain in ms and, when base was
// measured, its p50 and p95 and the ratios chain/base.
func reportAgainst(b *testing.B, prefix string, chain []time.Duration, name string, base []time.Duration) {
	slices.Sort(chain)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	c50, c95 := quantile(chain, 0.50), quantile(chain, 0.95)
	b.ReportMetric(ms(c50), prefix+"p50-ms")
	b.ReportMetric(ms(c95), prefix+"p95-ms")
	if len(base) == 0 {
		return
	}
	slices.Sort(base)
	b50, b95 := quantile(base, 0.50), quantile(base, 0.95)
	b.ReportMetric(ms(b50), name+"-p50-ms")
	b.ReportMetric(ms(b95), name+"-p95-ms")
	b.ReportMetric(float64(c50)/float64(b50), "p50-x-"+name)
	b.ReportMetric(float64(c95)/float64(b95), "p95-x-"+name)
}

// BenchmarkRunGo is the launch of a 60 MB binary, the go command itself
// (`go version`), through the whole chain under each binding, beside a
// bare os/exec of it: the sealed snapshot's copy and digest against the
// in-place witness.
func BenchmarkRunGo(b *testing.B) {
	const goBin = "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		b.Skipf("skip: %s is not on this host: %v", goBin, err)
	}
	d := startBroker(b, "")
	for _, binding := range []wire.Binding{wire.SealedSnapshot, wire.InPlace} {
		b.Run(binding.String(), func(b *testing.B) { benchRun(b, d, binding, goBin, "version") })
	}
}

// benchRun runs exe args under a lease pinned to binding until b is done,
// back to back.
func benchRun(b *testing.B, d *brokerd, binding wire.Binding, exe string, args ...string) {
	benchRunSpaced(b, d, binding, 0, exe, args...)
}

// benchRunSpaced is benchRun with an untimed pause of gap before each
// timed run, which starts once the daemon is quiet.
func benchRunSpaced(b *testing.B, d *brokerd, binding wire.Binding, gap time.Duration, exe string, args ...string) {
	a := d.newAgent(b)
	req := a.request(wire.ProfileShort, exe, args...)
	s, err := a.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		b.Fatalf("submit: %+v, %v", s, err)
	}
	if _, err := a.cl.ApproveBinding(s.Approval.ID, 10000, time.Hour, binding); err != nil { // the most uses a lease takes
		b.Fatal(err)
	}
	bin := exe
	if !filepath.IsAbs(exe) {
		bin = lookPath(b, exe)
	}
	bw := ""
	if exe == "true" {
		bw = bwrap(b)
	}
	var chain, bare, box []time.Duration
	last := ""
	for b.Loop() {
		time.Sleep(gap)
		quiet(b, d)
		t0 := time.Now()
		s, err := a.cl.Submit(a.WS, req)
		if err != nil || s.Handle == "" {
			b.Fatalf("submit: %+v, %v", s, err)
		}
		r := a.End(s.Handle)
		chain = append(chain, time.Since(t0))
		last = s.Handle
		if r.Outcome != wire.Exited || r.ReceiptID == "" {
			b.Fatalf("%s %+v receipt %q", r.Outcome, r.Error, r.ReceiptID)
		}
		time.Sleep(gap)
		quiet(b, d)
		t0 = time.Now()
		if err := exec.Command(bin, args...).Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
		if bw != "" {
			time.Sleep(gap)
			quiet(b, d)
			t0 = time.Now()
			if err := exec.Command(bw, append(slices.Clone(bwrapArgs), bin)...).Run(); err != nil {
				b.Fatal(err)
			}
			box = append(box, time.Since(t0))
		}
	}
	if rc := d.Receipt(last); rc.Sandbox == nil || rc.Sandbox.Binding != binding {
		b.Fatalf("the benchmark ran under %+v, not %s", rc.Sandbox, binding)
	}
	reportAgainst(b, "", chain, "bwrap", box)
	reportAgainst(b, "exec-", bare, "", nil)
	b.ReportMetric(float64(quantile(chain, 0.50))/float64(quantile(bare, 0.50)), "p50-x-exec")
}
