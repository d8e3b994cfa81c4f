//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// BenchmarkLaunchTrue measures launcher start → /bin/true exit, the whole
// broker-side round trip (socketpair, pipes, request, reply, output EOF,
// wait), interleaved with a bare os/exec of /bin/true in the same loop so
// that the ratio compares like with like. cache-hit passes a pre-made
// sealed snapshot (the launcher verifies and hashes it); cache-miss lets
// the launcher copy the file into a new memfd. warm is cache-hit sent to
// a launcher that has been waiting for 20 ms, as the daemon's warm
// launcher is (lifecycle.Warm), timed from the request: its checks,
// confinement and exec, and the target's run. broker-policy is cache-hit
// with the read set of a real daemon's policy (withBrokerPolicy: /etc
// granted entry by entry when it holds a secret); warm-broker-policy is
// that request sent to a warm launcher that was first sent its Prepare,
// as the daemon's warm launcher is. in-place executes the installed file
// through the descriptor the launcher verified (the default binding): no
// copy, no digest. The warm cases also time, in the same loop, the floor
// of any warm Go launcher: the smallest Go program (gofloor), waiting as
// long, told to execute /bin/true by one byte (go-exec-x-exec: what
// being a Go process costs; the rest of ratio-p50 is the launcher's
// checks, confinement and exchange with the broker).
func BenchmarkLaunchTrue(b *testing.B) {
	truePath, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		b.Skipf("skip: no /bin/true: %v", err)
	}
	a := newAction(b)
	req := a.Request(truePath)
	snap := makeSnapshot(b, req.Executable)
	b.Cleanup(func() { unix.Close(snap) })
	policy := withBrokerPolicy(b, withSnapshots(req), truePath)
	cases := []struct {
		name string
		l    launch
	}{
		{"cache-miss", launch{Req: req}},
		{"cache-hit", launch{Req: withSnapshots(req), Cached: []int{snap}}},
		{"warm", launch{Req: withSnapshots(req), Cached: []int{snap}, Warm: 20 * time.Millisecond}},
		{"broker-policy", launch{Req: policy, Cached: []int{snap}}},
		{"warm-broker-policy", launch{Req: policy, Cached: []int{snap}, Warm: 20 * time.Millisecond, Prepare: policy.Policy.Prepared()}},
		{"in-place", launch{Req: inPlace(req)}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			a.t = b
			var launcher, bare, floor []time.Duration
			for b.Loop() {
				if c.l.Warm > 0 {
					floor = append(floor, goExec(b, c.l.Warm, truePath))
				}
				start := time.Now()
				r := a.Launch(c.l)
				if c.l.Warm > 0 {
					start = r.Sent
				}
				launcher = append(launcher, time.Since(start))
				if _, ok := r.Reply.(*wire.Ready); !ok || r.State.ExitCode() != 0 {
					b.Fatalf("launch failed: %#v", r.Reply)
				}
				start = time.Now()
				if err := exec.Command(truePath).Run(); err != nil {
					b.Fatal(err)
				}
				bare = append(bare, time.Since(start))
			}
			lp50, lp95 := percentiles(launcher)
			bp50, bp95 := percentiles(bare)
			b.ReportMetric(lp50, "launcher-p50-µs")
			b.ReportMetric(lp95, "launcher-p95-µs")
			b.ReportMetric(bp50, "os/exec-p50-µs")
			b.ReportMetric(bp95, "os/exec-p95-µs")
			b.ReportMetric(lp50/bp50, "ratio-p50")
			if len(floor) > 0 {
				fp50, _ := percentiles(floor)
				b.ReportMetric(fp50, "go-exec-p50-µs")
				b.ReportMetric(fp50/bp50, "go-exec-x-exec")
			}
		})
	}
}

// goExec starts gofloor, lets it wait for warm as a warm launcher waits,
// and times it from the byte that tells it to execute path until that
// has exited.
func goExec(b *testing.B, warm time.Duration, path string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), launchSafety)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.gofloor, "exec", path)
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(warm)
	start := time.Now()
	_, err = w.Write([]byte{1})
	if werr := cmd.Wait(); err != nil || werr != nil {
		b.Fatalf("gofloor exec %s: %v, %v", path, err, werr)
	}
	return time.Since(start)
}

// inPlace is req bound in place: the installed file is executed through
// the descriptor the launcher verified; nothing is copied or hashed.
func inPlace(req *wire.SpawnRequest) *wire.SpawnRequest {
	r := *req
	r.Binding = wire.InPlace
	return &r
}

func withSnapshots(req *wire.SpawnRequest) *wire.SpawnRequest {
	r := *req
	r.Snapshots = true
	return &r
}

// percentiles returns p50 and p95 in microseconds.
func percentiles(d []time.Duration) (p50, p95 float64) {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(quantile(s, 0.50)) / 1e3, float64(quantile(s, 0.95)) / 1e3
}

// BenchmarkLaunchProtected measures the mount-namespace step: the same
// warm, cache-hit launch of /bin/true in a repository-shaped workspace,
// without binds and with the five binds of such a workspace, interleaved
// in one loop.
func BenchmarkLaunchProtected(b *testing.B) {
	truePath, err := filepath.EvalSymlinks("/bin/true")
	if err != nil {
		b.Skipf("skip: no /bin/true: %v", err)
	}
	a := newAction(b)
	protectedRepo(b, a.Workspace)
	req := withSnapshots(a.Request(truePath))
	snap := makeSnapshot(b, req.Executable)
	b.Cleanup(func() { unix.Close(snap) })
	protected := *req
	protected.Protect = protectBinds
	var plain, bound []time.Duration
	for b.Loop() {
		for i, r := range []*wire.SpawnRequest{req, &protected} {
			res := a.Launch(launch{Req: r, Cached: []int{snap}, Warm: 20 * time.Millisecond})
			took := time.Since(res.Sent)
			if ready, ok := res.Reply.(*wire.Ready); !ok || res.State.ExitCode() != 0 || ready.MountNS != (i == 1) {
				b.Fatalf("launch failed: %#v", res.Reply)
			}
			if i == 0 {
				plain = append(plain, took)
			} else {
				bound = append(bound, took)
			}
		}
	}
	pp50, pp95 := percentiles(plain)
	bp50, bp95 := percentiles(bound)
	b.ReportMetric(pp50, "plain-p50-µs")
	b.ReportMetric(pp95, "plain-p95-µs")
	b.ReportMetric(bp50, "protected-p50-µs")
	b.ReportMetric(bp95, "protected-p95-µs")
	b.ReportMetric(bp50-pp50, "step-p50-µs")
	b.ReportMetric(bp50/pp50, "ratio-p50")
}
