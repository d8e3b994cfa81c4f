package lifecycle

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"warrant/wire"
)

// BenchmarkCgroupSetup measures one action's launch and end (the fake
// launcher running /bin/true) under each way the broker contains it, in
// the same run: no cgroup; the cgroup v2 directory alone, killed and
// confirmed by cgroup.kill and cgroup.events, as before the limits
// (before); and with this host's memory and pids limits as well (now:
// on a hybrid host, two more cgroup v1 directories made, their limits
// written, the launcher born in them, the counters read and the
// directories removed). It reports each one's cost over the one before
// it as added-µs/op.
func BenchmarkCgroupSetup(b *testing.B) {
	cg, err := DetectCgroups(fmt.Sprintf("lifecycle-bench-%d", os.Getpid()))
	if err != nil {
		b.Skipf("skip: no cgroup hierarchy is writable here: %v", err)
	}
	defer cg.Remove()
	before := *cg
	before.v2, before.mem, before.pids, before.enf = nil, "", "", Enforcement{}
	if before.dir == "" {
		b.Skip("skip: no cgroup v2 directory to compare with")
	}
	ws, err := os.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	per := map[string]float64{}
	for i, c := range []struct {
		name string
		cg   *Cgroups
	}{{"none", nil}, {"v2-kill-only(before)", &before}, {"v2+limits(now)", cg}} {
		b.Run(c.name, func(b *testing.B) {
			var out, errs syncBuffer
			for i := 0; b.Loop(); i++ {
				r := Run(Spec{ID: fmt.Sprintf("b%d", i), Launcher: fakeLauncher, Workspace: ws, Limits: limits(time.Minute),
					Cgroup: c.cg, Stdout: &out, Stderr: &errs, Request: &wire.SpawnRequest{
						Protocol: wire.SpawnProtocol, Binding: wire.SealedSnapshot, Argv: []string{"true"}, Env: []wire.EnvVar{{Name: "PATH", Value: "/usr/bin:/bin"}},
						Workspace: wire.DirIdentity{Path: ws.Name()}, Cwd: wire.DirIdentity{Path: "."},
						Executable: wire.FileIdentity{Path: "/bin/true", SHA256: make([]byte, 32)},
						Profile:    wire.ProfileShort, Home: "/nonexistent", Tmp: "/tmp"}})
				if r.Outcome != wire.Exited || !r.GroupGone {
					b.Fatalf("outcome %s gone %v: %v %s", r.Outcome, r.GroupGone, r.Err, r.Evidence)
				}
			}
			us := float64(b.Elapsed().Microseconds()) / float64(b.N)
			per[c.name] = us
			if i > 0 {
				prev := []string{"none", "v2-kill-only(before)"}[i-1]
				b.ReportMetric(us-per[prev], "added-µs/op")
			}
			b.Logf("%s: %.0f µs per action; memory %s, pids %s", c.name, us, c.cg.enfOrNone().Memory, c.cg.enfOrNone().Pids)
		})
	}
}

// enfOrNone is c's enforcement, or nothing for no cgroups.
func (c *Cgroups) enfOrNone() Enforcement {
	if c == nil {
		return Enforcement{}
	}
	return c.enf
}

// BenchmarkCgroupFiles measures the cgroup file work of one action alone,
// without a launch, in the same run: making, reading and removing the
// cgroup v2 directory alone (before), and with this host's limits as
// well (now: the limits written, the counters read). The launcher's
// birth in its cgroup v1 directories is not measured here: it needs a
// launch (BenchmarkLaunchIntoCgroups).
func BenchmarkCgroupFiles(b *testing.B) {
	cg, err := DetectCgroups(fmt.Sprintf("lifecycle-bench-%d", os.Getpid()))
	if err != nil {
		b.Skipf("skip: no cgroup hierarchy is writable here: %v", err)
	}
	defer cg.Remove()
	before := *cg
	before.v2, before.mem, before.pids, before.enf = nil, "", "", Enforcement{}
	var base float64
	for i, c := range []*Cgroups{&before, cg} {
		b.Run([]string{"v2-kill-only(before)", "v2+limits(now)"}[i], func(b *testing.B) {
			for j := 0; b.Loop(); j++ {
				a, err := c.create(fmt.Sprintf("f%d", j), limits(time.Minute))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := a.populated(); err != nil {
					b.Fatal(err)
				}
				a.usage()
				a.remove()
			}
			us := float64(b.Elapsed().Nanoseconds()) / 1e3 / float64(b.N)
			if i == 0 {
				base = us
			} else {
				b.ReportMetric(us-base, "added-µs/op")
			}
		})
	}
}

// BenchmarkLaunchIntoCgroups starts a launcher in a new action's cgroups
// after 20 ms without a cgroup move, as a warm launcher is started after
// an action and an action that finds none starts its own: born in its
// cgroup v1 directories (inside), and, in the same loop, moved into them
// by a cgroup.procs write after its start (place), which waits for an RCU
// grace period. It reports each one's p50 and p95 in µs, the launch and
// the cgroups' making alone, without the pause.
func BenchmarkLaunchIntoCgroups(b *testing.B) {
	cg, err := DetectCgroups(fmt.Sprintf("lifecycle-bench-%d", os.Getpid()))
	if err != nil {
		b.Skipf("skip: no cgroup hierarchy is writable here: %v", err)
	}
	defer cg.Remove()
	if cg.mem == "" && cg.pids == "" {
		b.Skip("skip: no cgroup v1 hierarchy is used here: the launcher is born in its v2 directory by CLONE_INTO_CGROUP")
	}
	took := map[string][]time.Duration{}
	ways := []string{"born", "placed"}
	for i := 0; b.Loop(); i++ {
		for k := range ways {
			way := ways[(i+k)%len(ways)]
			b.StopTimer()
			time.Sleep(20 * time.Millisecond)
			b.StartTimer()
			t0 := time.Now()
			a, err := cg.create(fmt.Sprintf("%s-%d", way, i), limits(time.Minute))
			if err != nil {
				b.Fatal(err)
			}
			var l *launcher
			if way == "born" {
				born, err := a.inside(func() (err error) {
					l, err = startLauncher(fakeLauncher, a.fd)
					return err
				})
				if !born || err != nil {
					b.Fatalf("not born in its cgroups: %v", err)
				}
			} else {
				a.mounts = nil // no way back for a thread: moved after its start
				if l, err = a.launch(fakeLauncher); err != nil {
					b.Fatal(err)
				}
			}
			took[way] = append(took[way], time.Since(t0))
			l.abandon()
			<-l.exited
			a.remove()
		}
	}
	for _, way := range ways {
		d := took[way]
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), way+"-p50-µs")
		b.ReportMetric(float64(d[len(d)*95/100].Microseconds()), way+"-p95-µs")
	}
}
