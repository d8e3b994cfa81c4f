package lifecycle

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/profile"
	"warrant/wire"
)

var fakeLauncher string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lifecycle-test")
	if err != nil {
		panic(err)
	}
	fakeLauncher = filepath.Join(dir, "fakelauncher")
	out, err := exec.Command("go", "build", "-o", fakeLauncher, "./testdata/fakelauncher").CombinedOutput()
	if err != nil {
		panic("build fake launcher: " + err.Error() + "\n" + string(out))
	}
	if err := BecomeSubreaper(); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a sink safe to read after Run returns.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type run struct {
	id             string // the action's id, unique in this process like a handle
	res            Result
	stdout, stderr *syncBuffer
	events         []Event
}

func (r *run) kinds() string {
	var k []string
	for _, e := range r.events {
		k = append(k, e.Kind.String())
	}
	return strings.Join(k, ",")
}

// runs numbers the test actions.
var runs atomic.Int64

// launch runs "sh -c script" through the fake launcher with limits lim.
func launch(t *testing.T, script string, lim profile.Limits, cancel <-chan struct{}, argv0 string) *run {
	t.Helper()
	return launchIn(t, nil, script, lim, cancel, argv0)
}

// launchIn is launch with the action's cgroup created under cg (nil: none).
func launchIn(t *testing.T, cg *Cgroups, script string, lim profile.Limits, cancel <-chan struct{}, argv0 string) *run {
	t.Helper()
	return launchWith(t, cg, script, lim, cancel, argv0, nil)
}

// launchWith is launchIn with edit applied to the Spec (nil: none).
func launchWith(t *testing.T, cg *Cgroups, script string, lim profile.Limits, cancel <-chan struct{}, argv0 string, edit func(*Spec)) *run {
	t.Helper()
	ws, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	r := &run{id: fmt.Sprintf("t%d", runs.Add(1)), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	var mu sync.Mutex
	spec := Spec{
		ID: r.id, Launcher: fakeLauncher, Workspace: ws, Limits: lim, Cgroup: cg,
		Stdout: r.stdout, Stderr: r.stderr, Cancel: cancel,
		OnEvent: func(e Event) { mu.Lock(); r.events = append(r.events, e); mu.Unlock() },
		Request: &wire.SpawnRequest{
			Protocol: wire.SpawnProtocol, Binding: wire.SealedSnapshot,
			Argv: []string{argv0, "-c", script}, Env: []wire.EnvVar{{Name: "PATH", Value: "/usr/bin:/bin"}},
			Workspace: wire.DirIdentity{Path: ws.Name()}, Cwd: wire.DirIdentity{Path: "."},
			Executable: wire.FileIdentity{Path: "/bin/sh", SHA256: make([]byte, 32)},
			Profile:    wire.ProfileShort, Home: "/nonexistent", Tmp: "/tmp",
		},
	}
	if edit != nil {
		edit(&spec)
	}
	r.res = Run(spec)
	return r
}

func limits(wall time.Duration) profile.Limits {
	l := profile.Of(wire.ProfileShort)
	l.Wall = wall
	return l
}

// alive reports whether pid (read from the target's own output) exists.
func alive(t *testing.T, pidText string) bool {
	t.Helper()
	var pid int
	for _, c := range strings.TrimSpace(pidText) {
		if c < '0' || c > '9' {
			t.Fatalf("not a pid: %q", pidText)
		}
		pid = pid*10 + int(c-'0')
	}
	return unix.Kill(pid, 0) == nil
}

func TestExitCodeIsTheRootsOwn(t *testing.T) {
	r := launch(t, "echo out; echo err >&2; exit 3", limits(time.Minute), nil, "sh")
	if r.res.Outcome != wire.Exited || r.res.ExitCode == nil || *r.res.ExitCode != 3 {
		t.Fatalf("outcome %s exit %v, want exited 3 (%+v)", r.res.Outcome, r.res.ExitCode, r.res.Err)
	}
	if !r.res.GroupGone || r.stdout.String() != "out\n" || r.stderr.String() != "err\n" {
		t.Fatalf("group gone %v, stdout %q, stderr %q", r.res.GroupGone, r.stdout, r.stderr)
	}
	if r.kinds() != "STARTED,TERMINATED" {
		t.Fatalf("events %s", r.kinds())
	}
}

func TestSignalIsNotAnExitCode(t *testing.T) {
	r := launch(t, "kill -KILL $$", limits(time.Minute), nil, "sh")
	if r.res.Outcome != wire.Signaled || r.res.Signal != int(unix.SIGKILL) || r.res.ExitCode != nil {
		t.Fatalf("outcome %s signal %d exit %v", r.res.Outcome, r.res.Signal, r.res.ExitCode)
	}
}

func TestTimeoutEndsATargetThatIgnoresTERM(t *testing.T) {
	r := launch(t, `trap "" TERM; sleep 1000 & echo $!; wait`, limits(300*time.Millisecond), nil, "sh")
	if r.res.Outcome != wire.TimedOutReaped || r.res.Err.Code != wire.CodeTimeout || !r.res.GroupGone {
		t.Fatalf("outcome %s err %v gone %v: %s", r.res.Outcome, r.res.Err, r.res.GroupGone, r.res.Evidence)
	}
	if !strings.Contains(r.res.Err.Message, "wall-time limit of 300ms") {
		t.Fatalf("the timeout does not say which limit it met: %q", r.res.Err.Message)
	}
	if r.kinds() != "STARTED,TERM_SENT,KILL_SENT,TERMINATED" {
		t.Fatalf("events %s", r.kinds())
	}
	if r.res.Signal != int(unix.SIGKILL) {
		t.Fatalf("root ended by signal %d, want SIGKILL", r.res.Signal)
	}
	if alive(t, r.stdout.String()) {
		t.Fatal("the background sleep survived its group")
	}
}

func TestGrandchildHoldingStdoutDoesNotHang(t *testing.T) {
	r := launch(t, `sleep 1000 & echo $!`, limits(time.Minute), nil, "sh")
	if r.res.Outcome != wire.Exited || *r.res.ExitCode != 0 || !r.res.GroupGone || !r.res.StreamsComplete {
		t.Fatalf("outcome %s gone %v complete %v: %s", r.res.Outcome, r.res.GroupGone, r.res.StreamsComplete, r.res.Evidence)
	}
	if alive(t, r.stdout.String()) {
		t.Fatal("the grandchild outlived the action")
	}
	if !strings.Contains(r.kinds(), "KILL_SENT") {
		t.Fatalf("the remaining member was not killed: %s", r.kinds())
	}
}

func TestStoppedTargetIsEndedAtTimeout(t *testing.T) {
	r := launch(t, `kill -STOP $$`, limits(300*time.Millisecond), nil, "sh")
	if r.res.Outcome != wire.TimedOutReaped || !r.res.GroupGone {
		t.Fatalf("outcome %s gone %v: %s", r.res.Outcome, r.res.GroupGone, r.res.Evidence)
	}
}

func TestOutputBudgetEndsTheGroup(t *testing.T) {
	lim := limits(time.Minute)
	lim.HardOutput = 1 << 20
	r := launch(t, `while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done`, lim, nil, "sh")
	if r.res.Outcome != wire.OutputLimitReaped || r.res.Err.Code != wire.CodeOutputLimit {
		t.Fatalf("outcome %s err %v", r.res.Outcome, r.res.Err)
	}
	if n := len(r.stdout.String()); n <= 1<<20 {
		t.Fatalf("the sink holds %d bytes, not more than the budget of %d", n, 1<<20)
	}
}

func TestCancelEndsTheGroup(t *testing.T) {
	cancel := make(chan struct{})
	time.AfterFunc(200*time.Millisecond, func() { close(cancel) })
	r := launch(t, `sleep 1000`, limits(time.Minute), cancel, "sh")
	if r.res.Outcome != wire.CancelledReaped || r.res.Err.Code != wire.CodeCancelled || !r.res.GroupGone {
		t.Fatalf("outcome %s err %v", r.res.Outcome, r.res.Err)
	}
	if r.res.Signal != int(unix.SIGTERM) {
		t.Fatalf("root ended by signal %d, want SIGTERM within the grace period", r.res.Signal)
	}
}

func TestRefusalIsKnownNotExecuted(t *testing.T) {
	r := launch(t, `echo ran`, limits(time.Minute), nil, "refuse")
	if r.res.Outcome != wire.KnownNotExecuted || r.res.Err.Code != wire.CodeIdentityDrift || r.res.Refused == nil {
		t.Fatalf("outcome %s err %v", r.res.Outcome, r.res.Err)
	}
	if r.stdout.String() != "" || len(r.events) != 0 {
		t.Fatalf("a refused launch produced output %q or events %s", r.stdout, r.kinds())
	}
}

// A target that exits at once may be seen to exit before the EOF that
// proves its exec is read; the recorded exit must still not precede the
// recorded start, or the receipt would claim an end before its start.
func TestInstantExitIsNotBeforeStart(t *testing.T) {
	for i := 0; i < 30; i++ {
		r := launch(t, "exit 0", limits(time.Minute), nil, "sh")
		if r.res.Outcome != wire.Exited || !r.res.RootExited {
			t.Fatalf("outcome %s: %v", r.res.Outcome, r.res.Err)
		}
		if r.res.RootExitAt.Before(r.res.Started) || r.res.GoneAt.Before(r.res.RootExitAt) {
			t.Fatalf("run %d: started %v, root exited %v, group gone %v: out of order", i, r.res.Started, r.res.RootExitAt, r.res.GoneAt)
		}
		if got := r.events[0].Wall; !got.Equal(r.res.Started) {
			t.Fatalf("the STARTED event says %v, the result %v", got, r.res.Started)
		}
	}
}

// The launcher is sent Proceed only once Spec.Durable returned: while it
// waits, the launcher has replied Ready and nothing of the target has run;
// afterwards the target runs.
func TestProceedWaitsForDurable(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	var waited bool
	r := launchWith(t, nil, "echo ran > "+marker, limits(time.Minute), nil, "sh", func(s *Spec) {
		s.Durable = func() error {
			time.Sleep(100 * time.Millisecond) // a target that ran without Proceed would show in this time
			_, err := os.Stat(marker)
			waited = os.IsNotExist(err)
			return nil
		}
	})
	if !waited {
		t.Fatal("the target ran before Durable returned")
	}
	if r.res.Outcome != wire.Exited || r.res.Ready == nil {
		t.Fatalf("outcome %s: %v", r.res.Outcome, r.res.Err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the target did not run once Durable returned: %v", err)
	}
}

// A checkpoint that cannot be made durable runs nothing: the launcher,
// waiting for Proceed after Ready, is ended, and the outcome is
// known_not_executed with IO_FAILED.
func TestNothingRunsWhenTheCheckpointIsNotDurable(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	r := launchWith(t, nil, "echo ran > "+marker, limits(time.Minute), nil, "sh", func(s *Spec) {
		s.Durable = func() error {
			time.Sleep(100 * time.Millisecond) // a target sent Proceed before this would show in this time
			return errors.New("fsync: input/output error")
		}
	})
	if r.res.Outcome != wire.KnownNotExecuted || r.res.Err == nil || r.res.Err.Code != wire.CodeIOFailed || r.res.Ready == nil {
		t.Fatalf("outcome %s err %v ready %v", r.res.Outcome, r.res.Err, r.res.Ready != nil)
	}
	if !strings.Contains(r.res.Err.Message, "could not be made durable") {
		t.Fatalf("error %q", r.res.Err.Message)
	}
	if k := r.kinds(); k != "" {
		t.Fatalf("events %s for an action that never ran", k)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the target ran: %v", err)
	}
}

// A failure to record the launcher's origin ends the launch with nothing
// run: the launcher is killed and the target never runs.
func TestNothingRunsWhenTheOriginIsNotRecorded(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	var told Origin
	r := launchWith(t, nil, "echo ran > "+marker, limits(time.Minute), nil, "sh", func(s *Spec) {
		s.OnLaunch = func(o Origin) error {
			told = o
			return errors.New("journal: disk full")
		}
	})
	if told.Pid == 0 || r.res.Outcome != wire.KnownNotExecuted || r.res.Err == nil || !strings.Contains(r.res.Err.Message, "disk full") {
		t.Fatalf("origin %+v, outcome %s err %v", told, r.res.Outcome, r.res.Err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the target ran: %v", err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", told.Pid)); !os.IsNotExist(err) {
		t.Fatalf("the launcher %d is still there: %v", told.Pid, err)
	}
}

// A launcher whose Ready reports other bytes than the approved digest is
// not trusted with the action: its group is ended and the outcome is
// unknown, never exited.
func TestReadyThatDiffersFromTheRequestIsUnknown(t *testing.T) {
	r := launch(t, `echo ran; sleep 1000`, limits(time.Minute), nil, "lie")
	if r.res.Outcome != wire.OutcomeUnknown || r.res.Err.Code != wire.CodeIdentityDrift || !r.res.GroupGone {
		t.Fatalf("outcome %s err %v gone %v", r.res.Outcome, r.res.Err, r.res.GroupGone)
	}
	if k := r.kinds(); k != "TERM_SENT,KILL_SENT,UNKNOWN_TERMINATION" && k != "TERM_SENT,UNKNOWN_TERMINATION" {
		t.Fatalf("events %s", k)
	}
}

// With a delegated cgroup, the end is confirmed by cgroup.events as well
// as by /proc: a grandchild holding stdout is killed, the receipt can say
// "cgroup empty", and the action's cgroup is removed afterwards.
func TestCgroupConfirmsTheEnd(t *testing.T) {
	cg, err := DetectCgroups(fmt.Sprintf("lifecycle-test-%d", os.Getpid()))
	if err != nil {
		t.Skipf("skip: no cgroup hierarchy is writable here, so the cgroup path cannot be tested: %v", err)
	}
	defer cg.Remove()
	r := launchIn(t, cg, `sleep 1000 & echo $!`, limits(time.Minute), nil, "sh")
	want := "populated 0"
	if cg.Dir() == "" {
		want = "cgroup.procs lists no process"
	}
	if r.res.Outcome != wire.Exited || !r.res.GroupGone || !r.res.ByCgroup || !strings.Contains(r.res.Evidence, want) {
		t.Fatalf("outcome %s gone %v by cgroup %v: %s", r.res.Outcome, r.res.GroupGone, r.res.ByCgroup, r.res.Evidence)
	}
	if alive(t, r.stdout.String()) {
		t.Fatal("the grandchild outlived the action")
	}
	cg.quiesce() // the removal runs in the background
	if _, err := os.Stat(filepath.Join(cg.Dir(), r.id)); !os.IsNotExist(err) {
		t.Fatalf("the action's cgroup is still there after the action: %v", err)
	}
}

// With cgroups, no process is surveyed once the cgroups hold none: the
// root is reaped, then the zombies re-parented to this broker, until
// kill(-pgid, 0) is ESRCH. Orphans that exit as their parent does (Linux
// takes a process out of its cgroup before it re-parents its children)
// are still reaped: every run of a target that leaves orphan zombies ends
// with its group confirmed gone, and no zombie child of this process is
// left afterwards.
func TestOrphanZombiesAreReapedOnTheCgroupPath(t *testing.T) {
	cg, err := DetectCgroups(fmt.Sprintf("lifecycle-orphans-%d", os.Getpid()))
	if err != nil {
		t.Skipf("skip: no cgroup hierarchy is writable here, so the cgroup path cannot be tested: %v", err)
	}
	defer cg.Remove()
	fast := 0
	var groups []int
	for i := range 40 {
		// A subshell leaves zombie children to the sleep it becomes, which
		// never reaps them; they are re-parented as it exits.
		r := launchIn(t, cg, `(i=0; while [ $i -lt 50 ]; do true & i=$((i+1)); done; exec sleep 0.01) & exit 0`, limits(time.Minute), nil, "sh")
		if r.res.Outcome != wire.Exited || !r.res.GroupGone || !r.res.ByCgroup {
			t.Fatalf("run %d: outcome %s gone %v by cgroup %v: %s", i, r.res.Outcome, r.res.GroupGone, r.res.ByCgroup, r.res.Evidence)
		}
		if !strings.Contains(r.res.Evidence, "remains in /proc") && strings.Contains(r.res.Evidence, "re-parented to this broker were reaped") {
			fast++
		}
		groups = append(groups, r.res.Pid)
	}
	if fast == 0 {
		t.Fatal("no run was confirmed without a /proc scan once its cgroups were empty")
	}
	if z := zombieChildren(t, groups...); len(z) > 0 {
		t.Fatalf("zombie children left unreaped: %v", z)
	}
	t.Logf("%d of 40 runs confirmed without a /proc scan once the cgroups were empty", fast)
}

// zombieChildren lists the zombies whose parent is this process, in one
// of the process groups pgids.
func zombieChildren(t *testing.T, pgids ...int) []int {
	t.Helper()
	names, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, n := range names {
		pid, err := strconv.Atoi(n.Name())
		if err != nil {
			continue
		}
		if m, group, err := readStat(pid); err == nil && m.zombie && m.ppid == os.Getpid() && slices.Contains(pgids, group) {
			out = append(out, pid)
		}
	}
	return out
}

// emptiedGroup, the last check once the root is reaped, waits for the
// group's last processes to arrive among this broker's children as
// zombies (a member re-parented to it, exiting later, and that member's
// own zombie child re-parented as it exits), reaps them, and returns only
// once kill(-pgid, 0) is ESRCH.
func TestEmptiedGroupReapsWhatArrives(t *testing.T) {
	cmd := exec.Command("sh", "-c", `(true & exec sleep 0.3) & exec sleep 0.05`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	cmd.Wait() // the root reaped; its child, still sleeping, is now this process's
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("the group ended with its root (%v): nothing is left to arrive", err)
	}
	if err := emptiedGroup(pgid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pgid, 0); err != syscall.ESRCH {
		t.Fatalf("kill(-%d, 0) = %v after emptiedGroup", pgid, err)
	}
	if z := zombieChildren(t, pgid); len(z) > 0 {
		t.Fatalf("zombie children left unreaped: %v", z)
	}
}

// A root that something else reaped has no wait status: reap says so
// (ECHILD) rather than return a zero status, which reads as exit 0.
func TestReapOfARootReapedElsewhereIsNoStatus(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil { // reaped here, by os/exec
		t.Fatal(err)
	}
	ws, err := (&launcher{pid: cmd.Process.Pid}).reap()
	if err != unix.ECHILD {
		t.Fatalf("reap of a process reaped elsewhere: status %v, error %v; want ECHILD", ws, err)
	}
}
