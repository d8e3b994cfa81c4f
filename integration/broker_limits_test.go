//go:build linux

package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// hostLimit is one entry of the capability report's limits.
type hostLimit struct {
	Name       string `json:"name"`
	EnforcedBy string `json:"enforced_by"`
	Detail     string `json:"detail"`
}

// hostLimits reads what enforces each resource limit on the daemon's
// host, from the capability report it stored (`broker status --json`).
func hostLimits(t *testing.T, d *brokerd) map[string]hostLimit {
	t.Helper()
	out, code := d.CLI("status", "--json")
	var r struct {
		State  string      `json:"state"`
		Limits []hostLimit `json:"limits"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("broker status --json: exit %d, %v\n%s", code, err, out)
	}
	m := map[string]hostLimit{}
	for _, l := range r.Limits {
		m[l.Name] = l
	}
	return m
}

// requireLimit skips t, printing why, unless the daemon enforces the
// limit name: a fork bomb or a 5 GiB allocation without its limit would
// be a test of the machine, not of warrant.
func requireLimit(t *testing.T, d *brokerd, name string) hostLimit {
	t.Helper()
	l, ok := hostLimits(t, d)[name]
	if !ok || l.EnforcedBy == "none" {
		t.Skipf("skip: the %s limit is not enforced on this host (%s)", name, l.Detail)
	}
	return l
}

// forkBomb has no bound of its own: every shell forks two more and then
// becomes a sleep, and a shell whose fork is refused dies (dash: "Cannot
// fork"), freeing a slot for another. SIGTERM is ignored throughout.
// Only the action's pids.max stops it.
const forkBomb = `trap "" TERM
f() { f & f & exec sleep 1000; }
f &
echo planted
exec sleep 1000`

// pidsCgroup is the pids.current and pids.max files of the cgroup that
// holds pid's pids controller (v1 pids hierarchy, or v2), or "".
func pidsCgroup(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, dir := range []string{"/sys/fs/cgroup/pids" + f[2], "/sys/fs/cgroup/unified" + f[2], "/sys/fs/cgroup" + f[2]} {
			if (strings.Contains(","+f[1]+",", ",pids,") || f[0] == "0") && strings.Contains(f[2], "/warrant/") {
				if _, err := os.Stat(filepath.Join(dir, "pids.max")); err == nil {
					return dir
				}
			}
		}
	}
	return ""
}

func readInt(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %q", path, b)
	}
	return n
}

// TestForkBombIsBoundedByPidsMax runs a fork bomb with no bound of its
// own under profile short (256 processes). While it runs, the process
// count (a /proc scan for its marker) and the cgroup's pids.current are
// sampled and never exceed pids.max; the wall limit ends the group, it
// is confirmed gone, and the receipt records the limit, who enforced it,
// the peak and the refused forks.
func TestForkBombIsBoundedByPidsMax(t *testing.T) {
	d := shared(t)
	requireLimit(t, d, "pids")
	a := d.newAgent(t)
	mark := token(t)
	t.Cleanup(func() { killMarked(t, mark) })
	h := a.Start(a.request(wire.ProfileShort, "sh", "-c", "export WMARK="+mark+"\n"+forkBomb), 1)
	var (
		mu                        sync.Mutex
		maxSeen, maxCurrent, pmax int
		samples                   int
	)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		cg := ""
		for {
			select {
			case <-stop:
				return
			default:
			}
			pids := marked(t, mark)
			if cg == "" && len(pids) > 0 {
				cg = pidsCgroup(pids[0])
			}
			cur, lim := -1, -1
			if cg != "" {
				cur, lim = readInt(t, filepath.Join(cg, "pids.current")), readInt(t, filepath.Join(cg, "pids.max"))
			}
			mu.Lock()
			samples++
			maxSeen, maxCurrent = max(maxSeen, len(pids)), max(maxCurrent, cur)
			if lim > 0 {
				pmax = lim
			}
			over := len(pids) > 256+8 // +8: the scan is not atomic; a real breach grows without end
			mu.Unlock()
			if over {
				killMarked(t, mark) // never let a breach run on this shared machine
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	r := a.End(h)
	close(stop)
	<-done
	if r.Outcome != wire.TimedOutReaped || !strings.Contains(r.Stdout.Text, "planted") {
		t.Fatalf("outcome %s, stdout %q, error %+v", r.Outcome, r.Stdout.Text, r.Error)
	}
	// The agent is told the limit it met and the longer profiles.
	if want := "wall-time limit of 10s and its group was ended; that is the short profile's limit, and a longer profile needs its own approval: standard (2m0s), long (30m0s)"; r.Error == nil || !strings.Contains(r.Error.Message, want) {
		t.Fatalf("the timeout's words: %+v; want %q", r.Error, want)
	}
	rc := requireGone(t, d, r, mark)
	if pmax != 256 || maxCurrent > pmax || maxSeen > pmax {
		t.Fatalf("pids.max %d; sampled at most %d in pids.current and %d processes in /proc (%d samples)", pmax, maxCurrent, maxSeen, samples)
	}
	u := rc.Usage
	if rc.Limits.Pids != 256 || !strings.HasPrefix(rc.Limits.EnforcedBy.Pids, "cgroup_") || u == nil || u.PidsLimitHits == nil ||
		*u.PidsLimitHits == 0 || (u.PidsPeak != nil && *u.PidsPeak > 256) {
		t.Fatalf("receipt limits %+v usage %+v", rc.Limits, u)
	}
	peak := "not kept by this kernel"
	if u.PidsPeak != nil {
		peak = strconv.FormatUint(*u.PidsPeak, 10)
	}
	t.Logf("fork bomb under pids.max %d (%s): sampled peak %d processes in /proc and %d in pids.current over %d samples; pids.peak %s; %d forks refused",
		pmax, rc.Limits.EnforcedBy.Pids, maxSeen, maxCurrent, samples, peak, *u.PidsLimitHits)
}

// allocate touches 5 GiB, a page at a time: more than profile standard's
// 4 GiB (allocateProfile), whose 2 minutes of wall time leave room for a
// host whose fresh memory is slow to fault in. On one seen here that took
// 2.7 s a GiB, so profile short's 10 s ended a target over its 2 GiB by
// the wall time, before the memory limit was reached.
const allocate = `
b = bytearray(5 << 30)
for i in range(0, len(b), 4096):
    b[i] = 1
print("survived", flush=True)
`

// allocateProfile is the profile allocate runs under.
const allocateProfile = "standard"

// TestMemoryLimitEndsAFiveGiBTarget: a target that allocates and touches
// 5 GiB under profile standard (4 GiB) is killed by the memory limit, and
// every report says so: `broker run --json` (error MEMORY_LIMIT, "ended
// by the memory limit"), the text summary, and the receipt
// (limitReached: memory, the OOM kill counted, who enforced it). The
// broker's own memory stays small: the target's is charged to its cgroup.
func TestMemoryLimitEndsAFiveGiBTarget(t *testing.T) {
	d := shared(t)
	requireLimit(t, d, "memory")
	py := lookPath(t, "python3")
	a := d.newAgent(t)
	out, code := d.CLI("run", "--approve", "--json", "--profile", allocateProfile, "--workspace", a.WS, "--", py, "-c", allocate)
	var res runJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("broker run --json: %v\n%s", err, out)
	}
	if code != 128+9 || res.Outcome != "signaled" || res.Signal == nil || *res.Signal != 9 || res.Error == nil ||
		res.Error.Code != "MEMORY_LIMIT" || !strings.Contains(res.Error.Message, "ended by the memory limit (4 GiB)") ||
		strings.Contains(res.Stdout.Text, "survived") || !res.GroupGone {
		t.Fatalf("broker run --json: exit %d\n%s", code, out)
	}
	rc := d.Receipt(*res.ReceiptID)
	if rc.LimitReached != receipt.LimitMemory || rc.Usage == nil || rc.Usage.OOMKills == nil || *rc.Usage.OOMKills == 0 ||
		rc.Limits.MemoryBytes != 4<<30 || !strings.HasPrefix(rc.Limits.EnforcedBy.Memory, "cgroup_") || rc.Error == nil ||
		rc.Error.Code != wire.CodeMemoryLimit {
		t.Fatalf("receipt: limitReached %q usage %+v limits %+v error %+v", rc.LimitReached, rc.Usage, rc.Limits, rc.Error)
	}

	cmd := exec.Command(bins.broker, "run", "--approve", "--profile", allocateProfile, "--state", d.State, "--workspace", a.WS, "--", py, "-c", allocate)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+9 || !strings.Contains(stderr.String(), "ended by the memory limit") {
		t.Fatalf("broker run: %v\n%s", err, stderr.String())
	}
	hwm := d.HWM()
	if hwm > 256<<20 {
		t.Fatalf("the broker's peak RSS is %d MiB after two 5 GiB targets", hwm>>20)
	}
	t.Logf("killed by the memory limit (%s) after a peak of %d bytes; the broker's peak RSS is %d MiB",
		rc.Limits.EnforcedBy.Memory, derefOr(rc.Usage.MemoryPeakBytes), hwm>>20)
}

func derefOr(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// inActionCgroup lists the live processes whose cgroups name the action
// handle: a scan of /proc independent of the broker.
func inActionCgroup(t *testing.T, handle string) []int {
	t.Helper()
	names, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n.Name())
		if err != nil {
			continue
		}
		cg, _ := os.ReadFile("/proc/" + n.Name() + "/cgroup")
		st, err := os.ReadFile("/proc/" + n.Name() + "/stat")
		if err == nil && !isZombie(st) && bytes.Contains(cg, []byte("/"+handle+"\n")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestBrokerRestartEndsTheSurvivor SIGKILLs a daemon while its target
// `sleep 300` runs. The target survives its broker; the next broker on
// the state directory finds it inside the action's cgroups and ends it.
// The outcome stays unknown, the lease use stays spent, and the receipt
// log verifies with a signed survivors record naming the pid, the
// command and how it was ended.
func TestBrokerRestartEndsTheSurvivor(t *testing.T) {
	d1 := startBroker(t, "")
	a := d1.newAgent(t)
	h := a.Start(a.request(wire.ProfileStandard, "sleep", "300"), 1)
	deadline := time.Now().Add(daemonSafety)
	var before []int
	for len(before) == 0 && time.Now().Before(deadline) {
		if st, err := a.cl.Query(h); err == nil && st.State == wire.StateRunning {
			before = inActionCgroup(t, h)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(before) != 1 {
		t.Fatalf("the running action's cgroup holds %v", before)
	}
	t.Cleanup(func() { killPids(before) })
	d1.kill()
	if left := inActionCgroup(t, h); len(left) != 1 || left[0] != before[0] {
		t.Fatalf("the target did not outlive its broker: %v", left)
	}

	d2 := startBroker(t, d1.State)
	if left := inActionCgroup(t, h); len(left) != 0 {
		t.Fatalf("process(es) %v of %s are still running after the restart", left, h)
	}
	if err := syscall.Kill(before[0], 0); err == nil {
		if st, _ := os.ReadFile("/proc/" + strconv.Itoa(before[0]) + "/stat"); !isZombie(st) {
			t.Fatalf("the survivor %d is alive", before[0])
		}
	}
	if log := d2.log.String(); !strings.Contains(log, h) || !strings.Contains(log, strconv.Itoa(before[0])) || !strings.Contains(log, "were ended by") {
		t.Fatalf("the new broker did not say it ended %d:\n%s", before[0], log)
	}
	a2 := &agent{t: t, d: d2, cl: d2.dial(), WS: a.WS}
	st, err := a2.cl.Query(h)
	if err != nil || st.State != wire.StateUnknown || st.Result == nil || st.Result.Outcome != wire.OutcomeUnknown {
		t.Fatalf("after ending its survivor the action must stay unknown: %+v, %v", st, err)
	}
	leases, err := a2.cl.List(wire.ListLeases, false)
	if err != nil || len(leases.Leases) != 1 || leases.Leases[0].UsesLeft != 0 {
		t.Fatalf("the lease use must stay spent: %+v, %v", leases, err)
	}
	rep := d2.Verify()
	if rep.Survivors != 1 {
		t.Fatalf("receipts verify: %d survivors record(s), want 1: %+v", rep.Survivors, rep)
	}
	if rc := d2.Receipt(h); rc.Outcome != wire.OutcomeUnknown {
		t.Fatalf("the receipt says %s", rc.Outcome)
	}
	out, _ := d2.CLI("receipts", "list", "--json")
	listed := wholeListing[survivorsEntry](t, "receipts list", out)
	last := listed[len(listed)-1]
	if s := last.Survivors; last.Kind != "survivors" || s == nil || s.Action != h || len(s.Pids) != 1 || s.Pids[0] != before[0] || !s.Gone ||
		len(s.Commands) != 1 || s.Commands[0] != "sleep 300" || s.IdentifiedBy != "cgroup" {
		t.Fatalf("the last log entry is not the survivors record of %s:\n%s", h, out)
	}
	text, _ := d2.CLI("receipts", "list")
	if !strings.Contains(text, "survivors record") || !strings.Contains(text, strconv.Itoa(before[0])) {
		t.Fatalf("receipts list:\n%s", text)
	}
}

// removeScopeCgroups removes the (empty) cgroup directories a daemon on
// state made in each hierarchy, and its spares, which a SIGKILLed daemon
// leaves behind; a directory that still holds an action's cgroup stays
// for the next daemon on state, and "warrant" directories other daemons
// share are left alone.
func removeScopeCgroups(state string) {
	for _, dir := range scopeCandidates(state) {
		spares, _ := filepath.Glob(filepath.Join(dir, "spare-*")) // made ahead, never used
		for _, sp := range spares {
			os.Remove(sp)
		}
		os.Remove(dir)
	}
}

// scopeCgroups lists the cgroup directories a daemon on state has made:
// those of scopeCandidates that exist.
func scopeCgroups(state string) []string {
	var out []string
	for _, d := range scopeCandidates(state) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// scopeOf names the cgroup directories of the broker of state, as the
// broker does (broker/cli openBroker).
func scopeOf(state string) string {
	abs, err := filepath.Abs(state)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:8])
}

// scopeCandidates are the places a daemon on state may make its cgroup
// directory in: warrant/<scope> under this process's cgroup and under
// the root of each hierarchy.
func scopeCandidates(state string) []string { return scopeDirs(scopeOf(state)) }

// scopeDirs is where a broker of this process's cgroups makes the
// directories of scope: under its own cgroup in each hierarchy, or under
// the hierarchy's root.
func scopeDirs(scope string) []string {
	self, _ := os.ReadFile("/proc/self/cgroup")
	var out []string
	for line := range strings.Lines(string(self)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		mnt := "/sys/fs/cgroup/unified"
		if f[0] != "0" {
			mnt = "/sys/fs/cgroup/" + f[1]
		}
		for _, base := range []string{filepath.Join(mnt, f[2]), mnt} {
			if d := filepath.Join(base, "warrant", scope); !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}
