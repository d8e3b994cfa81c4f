package linux

import (
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/landlockabi"
	"warrant/wire"
)

// BenchmarkConfine times the launcher's own steps 9 and 10 for a request
// like BenchmarkLaunchTrue's: restrictFS (a ruleset; the runtime
// directories that are not links, the workspace, HOME and TMPDIR), then
// no_new_privs and installSeccomp's two programs, each run on a throwaway
// thread (onThread). It answers what confinement alone costs a launch,
// beside LaunchTrue's ratio and its go-exec floor.
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
	var landlock, seccomp []time.Duration
	for b.Loop() {
		var ll, sc time.Duration
		if err := onThread(func() (err error) { ll, sc, err = confine(req, dir); return err }); err != nil {
			b.Fatal(err)
		}
		landlock, seccomp = append(landlock, ll), append(seccomp, sc)
	}
	total := make([]time.Duration, len(landlock))
	for i := range total {
		total[i] = landlock[i] + seccomp[i]
	}
	for _, m := range []struct {
		unit string
		d    []time.Duration
	}{{"landlock-p50-µs", landlock}, {"seccomp-p50-µs", seccomp}, {"confine-p50-µs", total}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Microseconds()), m.unit)
	}
}

// confine applies steps 9 and 10 to the calling thread and returns how
// long each took.
func confine(req *wire.SpawnRequest, ws string) (landlock, seccomp time.Duration, err error) {
	fd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	t0 := time.Now()
	rules, err := newRules()
	if err == nil {
		err = restrictFS(req, rules, fd, &wire.Ready{})
	}
	t1 := time.Now()
	if err != nil {
		return 0, 0, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return 0, 0, os.NewSyscallError("prctl", err)
	}
	_, listener, err := installSeccomp(false)
	t2 := time.Now()
	if err != nil {
		return 0, 0, err
	}
	unix.Close(listener)
	return t1.Sub(t0), t2.Sub(t1), nil
}
