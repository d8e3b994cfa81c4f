//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"warrant/broker"
	"warrant/broker/runner"
	"warrant/internal/probeprog"
	"warrant/wire"
)

var denyfirst = struct {
	once sync.Once
	path string
	err  error
}{}

// denyfirstBin builds integration/testdata/denyfirst once, static, beside
// the other binaries.
func denyfirstBin(t testing.TB) string {
	t.Helper()
	denyfirst.once.Do(func() {
		denyfirst.path = filepath.Join(bins.dir, "denyfirst")
		cmd := exec.Command("go", "build", "-o", denyfirst.path, "warrant/integration/testdata/denyfirst")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			denyfirst.err = err
			t.Logf("%s", out)
		}
	})
	if denyfirst.err != nil {
		t.Fatalf("build denyfirst: %v", denyfirst.err)
	}
	return denyfirst.path
}

// cborModule copies github.com/fxamacker/cbor/v2 from the host's module
// cache into ws with its dependency vendored: a real module of 40 files
// that builds without the network.
func cborModule(t testing.TB, ws string) {
	t.Helper()
	gotool := goTool(t)
	cache, err := exec.Command(gotool, "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(strings.TrimSpace(string(cache)), "github.com", "fxamacker", "cbor", "v2@v2.10.0")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("skip: the module is not in the host's module cache: %v", err)
	}
	dst := filepath.Join(ws, "cbor")
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copy the module: %v\n%s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", dst).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	vendor := exec.Command(gotool, "mod", "vendor")
	vendor.Dir, vendor.Env = dst, append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := vendor.CombinedOutput(); err != nil {
		t.Fatalf("go mod vendor: %v\n%s", err, out)
	}
}

// BenchmarkDenialObservers is the cost of counting the filter's refusals
// through the broker (issue 35's acceptance: at most 2% on an ordinary
// build): `go build -a` of a real module (fxamacker/cbor, vendored) and
// `npm test` of the workload fixture, each run through the whole chain
// with the observers on and off, alternately, in the same run. Off is
// the same target under one more filter that refuses the counted calls
// in the kernel (testdata/denyfirst off), so that the broker sees none of
// them, as before they were counted; on is the same filter allowing
// them. It reports each arm's median, the ratio on/off, and the refusals
// the broker counted per run with the observers on (each off run must
// have had none: else the filter missed one); refused-sockets, a loop of
// 10,000 refused sockets, prices one counted refusal.
func BenchmarkDenialObservers(b *testing.B) {
	df := denyfirstBin(b)
	d := startBroker(b, "")
	b.Run("go-build", func(b *testing.B) {
		a := d.newAgent(b)
		cborModule(b, a.WS)
		benchObservers(b, a, df, wire.ProfileLong, "cbor", goTool(b), "build", "-a", "-mod=vendor", "-o", "/dev/null", "./...")
	})
	b.Run("npm-test", func(b *testing.B) {
		lookPath(b, "node")
		npm := lookPath(b, "npm")
		a := d.newAgent(b)
		npmFixture(b, a.WS, "bench")
		benchObservers(b, a, df, wire.ProfileStandard, ".", npm, "test")
	})
	// The price of one counted refusal: a loop of refused sockets.
	b.Run("refused-sockets", func(b *testing.B) {
		benchObservers(b, d.newAgent(b), df, wire.ProfileStandard, ".", python(b), "-c", socketLoop)
	})
}

// socketLoop has 10,000 sockets refused.
const socketLoop = `import socket
for i in range(10000):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except PermissionError:
        pass
`

// benchObservers runs argv in cwd under denyfirst on and off until b is
// done, alternating which goes first, and reports the medians.
func benchObservers(b *testing.B, a *agent, df string, p wire.Profile, cwd string, argv ...string) {
	reqs := map[string]wire.ActionRequest{}
	for _, arm := range []string{"on", "off"} {
		req := a.request(p, df, append([]string{arm}, argv...)...)
		req.Cwd = cwd
		s, err := a.cl.Submit(a.WS, req)
		if err != nil || s.Approval == nil {
			b.Fatalf("submit: %+v, %v", s, err)
		}
		if _, err := a.cl.Approve(s.Approval.ID, 10000, time.Hour); err != nil {
			b.Fatal(err)
		}
		reqs[arm] = req
	}
	took := map[string][]time.Duration{}
	var counted uint64
	run := func(arm string) {
		t0 := time.Now()
		s, err := a.cl.Submit(a.WS, reqs[arm])
		if err != nil || s.Handle == "" {
			b.Fatalf("submit: %+v, %v", s, err)
		}
		r := a.End(s.Handle)
		took[arm] = append(took[arm], time.Since(t0))
		if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 || r.Denials == nil {
			b.Fatalf("%s %v: %s %+v\n%s\n%s", arm, argv, r.Outcome, r.Error, tail(r.Stdout.Text), tail(r.Stderr.Text))
		}
		if arm == "off" && r.Denials.Total != 0 {
			b.Fatalf("the broker counted %d refusals under denyfirst off: %+v", r.Denials.Total, r.Denials.Records)
		}
		if arm == "on" {
			counted += r.Denials.Total
		}
	}
	run("on") // warm the caches both arms share
	took["on"], counted = nil, 0
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			run("on")
			run("off")
		} else {
			run("off")
			run("on")
		}
		i++
	}
	med := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(quantile(s, 0.5)) / 1e6
	}
	on, off := med(took["on"]), med(took["off"])
	b.ReportMetric(on, "on-p50-ms")
	b.ReportMetric(off, "off-p50-ms")
	b.ReportMetric(on/off, "on-x-off")
	perRun := float64(counted) / float64(len(took["on"]))
	b.ReportMetric(perRun, "counted/run")
	if perRun > 0 {
		b.ReportMetric((on-off)*1e3/perRun, "added-µs/counted")
	}
}

// hintArms is the real runner twice, one launching with the observer of
// write-intent opens (runner.Options.WriteHints, which also probes the
// host; off by default, broker serve --write-hints) and one without it,
// under one broker: useOff says which the next action takes.
type hintArms struct {
	*runner.Runner // on
	off            *runner.Runner
	useOff         atomic.Bool
}

func (h *hintArms) Start(ctx context.Context, l *runner.Launch, obs runner.Observer) error {
	if h.useOff.Load() {
		return h.off.Start(ctx, l, obs)
	}
	return h.Runner.Start(ctx, l, obs)
}

func (h *hintArms) Cancel(handle, reason string) wire.CancelResult {
	if r := h.Runner.Cancel(handle, reason); r != wire.CancelUnknown {
		return r
	}
	return h.off.Cancel(handle, reason)
}

// BenchmarkWriteHintObserver is the cost of the observer of write-intent
// opens (issue 35's acceptance: at most 2% on an ordinary build): `go
// build -a` of a real module (fxamacker/cbor, vendored) and `npm test`
// of the workload fixture, through the broker in this process (no
// sockets), each run with the observer on and off, alternately, in the
// same run (off is the default). It reports each arm's median and the
// ratio on/off, and fails on a hint of these allowed runs.
func BenchmarkWriteHintObserver(b *testing.B) {
	h := &hintArms{}
	for _, arm := range []struct {
		r   **runner.Runner
		off bool
	}{{&h.Runner, false}, {&h.off, true}} {
		r, err := runner.New(runner.Options{Launcher: bins.launcher, Scope: "hints-" + token(b), Warm: true, WriteHints: !arm.off}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		*arm.r = r
	}
	dir := b.TempDir()
	ctx := context.Background()
	br, err := broker.Open(ctx, broker.Config{StateDir: filepath.Join(dir, "state"), Executor: h, Environ: os.Environ(),
		ProbeTarget: []string{bins.brokerd, "probe", probeprog.Arg}, Binaries: []string{bins.brokerd, bins.launcher}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	b.Run("go-build", func(b *testing.B) {
		cborModule(b, ws)
		benchHints(b, br, h, ws, wire.ActionRequest{Executable: goTool(b), Cwd: "cbor", Profile: wire.ProfileLong,
			Argv: []string{"build", "-a", "-mod=vendor", "-o", "/dev/null", "./..."}})
	})
	b.Run("npm-test", func(b *testing.B) {
		lookPath(b, "node")
		npmFixture(b, ws, "bench")
		benchHints(b, br, h, ws, wire.ActionRequest{Executable: lookPath(b, "npm"), Cwd: ".", Profile: wire.ProfileStandard,
			Argv: []string{"test"}})
	})
}

// benchHints runs req in ws with the observer on and off until b is done,
// alternating which goes first, and reports the medians.
func benchHints(b *testing.B, br *broker.Broker, h *hintArms, ws string, req wire.ActionRequest) {
	ctx := context.Background()
	req.Session = "s-" + token(b)
	sub := &wire.Submit{Workspace: ws, Request: req}
	if err := approveInProcess(ctx, br, sub, 10000); err != nil {
		b.Fatal(err)
	}
	took := map[bool][]time.Duration{}
	run := func(off bool) {
		h.useOff.Store(off)
		t0 := time.Now()
		m, err := br.Submit(ctx, sub)
		acc, ok := m.(*wire.Accepted)
		if err != nil || !ok {
			b.Fatalf("submit: %#v %v", m, err)
		}
		w, err := br.Wait(ctx, acc.Handle, 10*time.Minute)
		st, ok := w.(*wire.Status)
		if err != nil || !ok || st.Result == nil || st.Result.Outcome != wire.Exited || *st.Result.ExitCode != 0 {
			b.Fatalf("wait: %#v %v", w, err)
		}
		took[off] = append(took[off], time.Since(t0))
		d := st.Result.Denials
		if d == nil || slices.Contains(d.Sources, "hint") == off {
			b.Fatalf("off %v: sources %+v", off, d)
		}
		for _, c := range d.Counts {
			if c.Source == wire.SourceHint {
				b.Fatalf("a hint of an allowed run: %+v", d.Records)
			}
		}
	}
	run(false) // warm the caches both arms share
	took[false] = nil
	i := 0
	for b.Loop() {
		run(i%2 == 1)
		run(i%2 == 0)
		i++
	}
	med := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(quantile(s, 0.5)) / 1e6
	}
	on, off := med(took[false]), med(took[true])
	b.ReportMetric(on, "on-p50-ms")
	b.ReportMetric(off, "off-p50-ms")
	b.ReportMetric(on/off, "on-x-off")
}
