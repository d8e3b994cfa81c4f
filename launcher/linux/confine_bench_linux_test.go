package linux

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/landlockabi"
	"warrant/wire"
)

// BenchmarkConfine times the launcher's own confinement for a request like
// BenchmarkLaunchTrue's, each run on a throwaway thread (onThread), in its
// steps' order: what a warm launcher does before its request
// (args-p50-µs: no_new_privs, the argument program, the empty ruleset),
// then what every launch does after it (confine-p50-µs), restrictFS
// (landlock-p50-µs: the runtime directories that are not links, the
// workspace, HOME and TMPDIR) and the main program (seccomp-p50-µs). It
// answers what confinement costs a launch, beside LaunchTrue's ratio and
// its go-exec floor.
func BenchmarkConfine(b *testing.B) {
	if abi := landlockabi.Running(); abi < landlockabi.TCP {
		b.Skipf("skip: Landlock ABI %d is below the launcher's floor %d", abi, landlockabi.TCP)
	}
	if len(programs(false)) == 0 {
		b.Skip("skip: no seccomp programs were generated for this architecture")
	}
	dir := b.TempDir()
	req := &wire.SpawnRequest{Home: dir, Tmp: dir}
	for _, p := range []string{"/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"} {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			req.Policy.ReadExec = append(req.Policy.ReadExec, p)
			req.Policy.Pins = append(req.Policy.Pins, wire.PathPin{Path: p, Dev: st.Dev, Ino: st.Ino})
		}
	}
	var args, landlock, seccomp, total []time.Duration
	for b.Loop() {
		var t [4]time.Time
		if err := onThread(func() error { return confine(req, dir, &t) }); err != nil {
			b.Fatal(err)
		}
		args, landlock, seccomp = append(args, t[1].Sub(t[0])), append(landlock, t[2].Sub(t[1])), append(seccomp, t[3].Sub(t[2]))
		total = append(total, t[3].Sub(t[1]))
	}
	for _, m := range []struct {
		unit string
		d    []time.Duration
	}{{"args-p50-µs", args}, {"landlock-p50-µs", landlock}, {"seccomp-p50-µs", seccomp}, {"confine-p50-µs", total}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.unit)
	}
}

// confine applies the launcher's confinement to the calling thread in
// the launcher's order, the time before each part and after the last in t.
func confine(req *wire.SpawnRequest, ws string, t *[4]time.Time) error {
	fd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	t[0] = time.Now()
	if err := installArgs(); err != nil {
		return err
	}
	rules, err := newRules()
	if err != nil {
		return err
	}
	t[1] = time.Now()
	if err := restrictFS(req, rules, fd, &wire.Ready{}); err != nil {
		return err
	}
	t[2] = time.Now()
	_, listener, err := installSeccomp(false)
	t[3] = time.Now()
	if err != nil {
		return err
	}
	return unix.Close(listener)
}
