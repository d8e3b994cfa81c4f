//go:build linux

package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/receipt"
	"warrant/wire"
)

// The broker harness runs the real `broker serve` built by TestMain on a
// fresh state directory, with the real launcher, and talks to it through
// its sockets with broker/client. No test asserts on time; the bounds
// below only stop a wedged daemon from hanging the suite.
const (
	daemonSafety = 2 * time.Minute // for any one action to end
	dialAttempts = 2000            // × 5 ms for a daemon to answer
)

// brokerd is one running `broker serve`.
type brokerd struct {
	t     testing.TB
	State string
	cmd   *exec.Cmd
	log   *syncBuffer
	done  chan struct{}
}

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

// startBroker starts a daemon on state ("" for a fresh one) and waits
// until its agent socket answers. The test's cleanup kills it.
func startBroker(t testing.TB, state string, serveArgs ...string) *brokerd {
	t.Helper()
	if state == "" {
		state = filepath.Join(t.TempDir(), "state")
	}
	d, err := spawnBroker(state, serveArgs...)
	if err != nil {
		t.Fatal(err)
	}
	d.t = t
	t.Cleanup(d.kill)
	// Its own line, not only a socket that answers: a restart's dial must
	// not be taken for this daemon's.
	for deadline := time.Now().Add(daemonSafety); !strings.Contains(d.log.String(), "broker: serving "); time.Sleep(5 * time.Millisecond) {
		select {
		case <-d.done:
			t.Fatalf("broker serve exited: %v\n%s", d.cmd.ProcessState, d.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker serve never said it serves:\n%s", d.log)
		}
	}
	d.dial().Close()
	return d
}

// brokerCanary is in every daemon's own environment, as a credential
// variable and as a variable of no meaning; no target may see it.
const brokerCanary = "canary-broker-env-4711"

// spawnBroker starts `broker serve --state STATE SERVEARGS...` with the
// launcher TestMain built and the canaries in its environment.
func spawnBroker(state string, serveArgs ...string) (*brokerd, error) {
	return spawnDaemon(state, []string{"OPENAI_API_KEY=" + brokerCanary, "WARRANT_CANARY=" + brokerCanary}, serveArgs...)
}

// spawnDaemon starts `broker serve --state STATE ARGS...` with the
// launcher TestMain built and extra in its environment (startDaemon).
func spawnDaemon(state string, extra []string, args ...string) (*brokerd, error) {
	d := &brokerd{State: state, log: &syncBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(bins.broker, append([]string{"serve", "--state", state}, args...)...)
	d.cmd.Env = append(append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher), extra...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := startDaemon(d.cmd); err != nil {
		return nil, err
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	return d, nil
}

// startDaemon starts cmd, a daemon, so that it is sent SIGTERM if the
// test binary dies first (killed, its cleanups never run): no daemon
// outlives an interrupted run. Linux sends that signal when the thread
// that forked the daemon ends, whichever goroutine ends it (lifecycle,
// run in this process by some tests, ends a thread it could not move back
// out of an action's cgroups), so every daemon is forked on one thread
// that lives as long as the binary.
func startDaemon(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	errc := make(chan error)
	daemonThread() <- func() { errc <- cmd.Start() }
	return <-errc
}

// daemonThread runs what it is sent on one goroutine locked to its
// thread, never unlocked.
var daemonThread = sync.OnceValue(func() chan<- func() {
	c := make(chan func())
	go func() {
		runtime.LockOSThread()
		for f := range c {
			f()
		}
	}()
	return c
})

var sharedD struct {
	sync.Mutex
	d *brokerd
}

// shared returns, for t, the daemon shared by the tests that only need
// one. The first call starts it; TestMain kills it after the tests.
func shared(t *testing.T) *brokerd {
	t.Helper()
	sharedD.Lock()
	defer sharedD.Unlock()
	if sharedD.d == nil {
		// Not under bins.dir: the probe target's directory is granted to
		// its policy, and the state directory must stay out of reach.
		dir, err := os.MkdirTemp("", "warrant-shared-state-")
		if err != nil {
			t.Fatal(err)
		}
		// It records write hints, so that every test through it shows
		// real programs run unchanged with the observer on.
		d, err := spawnBroker(dir, "--write-hints")
		if err != nil {
			t.Fatal(err)
		}
		sharedD.d = d
	}
	d := sharedD.d.in(t)
	d.dial()
	return d
}

// in returns d for t: the harness's failures and cleanups go to t.
func (d *brokerd) in(t testing.TB) *brokerd {
	c := *d
	c.t = t
	return &c
}

// stopShared kills the shared daemon, if one was started.
func stopShared() {
	if sharedD.d != nil {
		sharedD.d.kill()
		os.RemoveAll(sharedD.d.State)
	}
}

// dial returns a client of the daemon, retrying until it answers.
func (d *brokerd) dial() *client.Client {
	d.t.Helper()
	var last error
	for range dialAttempts {
		cl, err := client.Dial(d.State)
		if err == nil {
			d.t.Cleanup(func() { cl.Close() })
			return cl
		}
		select {
		case <-d.done:
			d.t.Fatalf("broker serve exited: %v\n%s", d.cmd.ProcessState, d.log)
		case <-time.After(5 * time.Millisecond):
		}
		last = err
	}
	d.t.Fatalf("broker serve never answered: %v\n%s", last, d.log)
	return nil
}

// kill SIGKILLs the daemon, waits for it to be reaped and removes the
// cgroup directories it can no longer remove itself.
func (d *brokerd) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	removeScopeCgroups(d.State)
}

// Pid is the daemon's process id.
func (d *brokerd) Pid() int { return d.cmd.Process.Pid }

// HWM is the daemon's peak resident set size (VmHWM), in bytes.
func (d *brokerd) HWM() int64 {
	d.t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.Pid()) + "/status")
	if err != nil {
		d.t.Fatal(err)
	}
	kb, err := strconv.ParseInt(strings.TrimSuffix(statusField(d.t, string(b), "VmHWM"), " kB"), 10, 64)
	if err != nil {
		d.t.Fatal(err)
	}
	return kb << 10
}

// CPU is the CPU time the daemon has used, with that of the children it
// reaped (the launchers and targets of its actions): utime, stime,
// cutime and cstime of /proc/PID/stat, in clock ticks of 1/100 s.
func (d *brokerd) CPU() time.Duration {
	d.t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.Pid()) + "/stat")
	if err != nil {
		d.t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:])) // fields from 3 (state) on
	var ticks int64
	for _, i := range []int{14, 15, 16, 17} {
		n, err := strconv.ParseInt(f[i-3], 10, 64)
		if err != nil {
			d.t.Fatalf("/proc/%d/stat field %d: %v", d.Pid(), i, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// Quiet waits until the daemon and its children have run for less than
// quietCPU in one quietWindow: the work an action leaves behind it (the
// next warm launcher, the removal of its directories and cgroups) is done.
// The benchmarks time each run, the chain's and the baselines' alike,
// from a quiet daemon, so that no run is slowed by work of the one before
// it on the same two cores.
func (d *brokerd) Quiet() {
	d.t.Helper()
	last := treeRuntime(d.Pid())
	for deadline := time.Now().Add(daemonSafety); time.Now().Before(deadline); {
		time.Sleep(quietWindow)
		now := treeRuntime(d.Pid())
		if used := now - last; used >= 0 && used < quietCPU { // a task that ended makes it negative
			return
		}
		last = now
	}
	d.t.Fatalf("the daemon was still busy after %s\n%s", daemonSafety, d.log)
}

// What Quiet calls a quiet daemon. An idle daemon and its warm launcher
// sleep: they run 0 µs in most 2 ms windows here.
const (
	quietWindow = 2 * time.Millisecond
	quietCPU    = 50 * time.Microsecond
)

// treeRuntime is the CPU time the threads of pid and of its children have
// run (the first field of each task's schedstat, in ns).
func treeRuntime(pid int) time.Duration {
	var ns int64
	for _, p := range append(children(pid), pid) {
		dir := "/proc/" + strconv.Itoa(p) + "/task/"
		tasks, _ := os.ReadDir(dir)
		for _, task := range tasks {
			b, _ := os.ReadFile(dir + task.Name() + "/schedstat")
			if f := strings.Fields(string(b)); len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				ns += n
			}
		}
	}
	return time.Duration(ns)
}

// CLI runs `broker ARGS... --state STATE` and returns its stdout and exit
// status.
func (d *brokerd) CLI(args ...string) (string, int) {
	d.t.Helper()
	at := slices.Index(args, "--") // flags go before the command of `broker run`
	if at < 0 {
		at = len(args)
	}
	args = slices.Concat(args[:at], []string{"--state", d.State}, args[at:])
	cmd := exec.Command(bins.broker, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		d.t.Fatal(err)
	}
	if errb.Len() > 0 {
		d.t.Logf("broker %s: stderr:\n%s", args[0], errb.String())
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// Receipt returns the stored receipt of an action (by handle or receipt
// id) as `broker receipts show --json` prints it, and requires that it
// verifies.
func (d *brokerd) Receipt(id string) *receipt.Receipt {
	d.t.Helper()
	out, code := d.CLI("receipts", "show", id, "--json")
	if code != 0 {
		d.t.Fatalf("broker receipts show %s: exit %d\n%s", id, code, out)
	}
	var shown struct {
		Verified bool             `json:"verified"`
		Receipt  *receipt.Receipt `json:"receipt"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		d.t.Fatalf("decode receipts show: %v\n%s", err, out)
	}
	if !shown.Verified || shown.Receipt == nil {
		d.t.Fatalf("receipt %s does not verify:\n%s", id, out)
	}
	return shown.Receipt
}

// Verify requires that `broker receipts verify` passes and returns its
// report.
func (d *brokerd) Verify() *verified {
	d.t.Helper()
	out, code := d.CLI("receipts", "verify", "--json")
	var rep verified
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		d.t.Fatalf("decode receipts verify: %v\n%s", err, out)
	}
	if code != 0 || !rep.OK {
		d.t.Fatalf("broker receipts verify: exit %d\n%s", code, out)
	}
	return &rep
}

// agent is one agent session of a daemon in one workspace.
type agent struct {
	t  testing.TB
	d  *brokerd
	cl *client.Client
	WS string
}

// newAgent dials d for a test with a fresh workspace.
func (d *brokerd) newAgent(t testing.TB) *agent {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return &agent{t: t, d: d, cl: d.dial(), WS: ws}
}

// request is an action in the workspace root under profile p, in a session
// of its own (one action in flight per session).
func (a *agent) request(p wire.Profile, exe string, args ...string) wire.ActionRequest {
	return wire.ActionRequest{Executable: exe, Argv: args, Cwd: ".", Profile: p, Session: "s-" + token(a.t)}
}

// Start submits req, approves the one request it raises with uses uses,
// and returns the handle.
func (a *agent) Start(req wire.ActionRequest, uses uint32) string {
	a.t.Helper()
	s, err := a.cl.Submit(a.WS, req)
	if err != nil {
		a.t.Fatalf("submit: %v", err)
	}
	if s.Approval != nil {
		if _, err := a.cl.Approve(s.Approval.ID, uses, time.Hour); err != nil {
			a.t.Fatalf("approve: %v", err)
		}
		if s, err = a.cl.Submit(a.WS, req); err != nil {
			a.t.Fatalf("submit after approval: %v", err)
		}
	}
	if s.Handle == "" {
		a.t.Fatalf("submit after approval asked for approval again: %+v", s.Approval)
	}
	return s.Handle
}

// End waits for the action to be terminal or unknown.
func (a *agent) End(handle string) *wire.Result {
	a.t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for time.Now().Before(deadline) {
		st, _, err := a.cl.Wait(handle, 10*time.Second)
		if err != nil {
			a.t.Fatalf("wait %s: %v", handle, err)
		}
		if st != nil {
			if st.Result == nil {
				a.t.Fatalf("action %s is %s without a result", handle, st.State)
			}
			return st.Result
		}
	}
	a.t.Fatalf("action %s did not end within %s\n%s", handle, daemonSafety, a.d.log)
	return nil
}

// Run starts req with a one-use lease and waits for its end.
func (a *agent) Run(req wire.ActionRequest) (string, *wire.Result) {
	a.t.Helper()
	h := a.Start(req, 1)
	return h, a.End(h)
}

// awaitRunning waits until the action is running and path (a file the
// target writes once it is set up) has at least lines lines.
func (a *agent) awaitRunning(handle, path string, lines int) []string {
	a.t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for time.Now().Before(deadline) {
		st, err := a.cl.Query(handle)
		if err != nil {
			a.t.Fatal(err)
		}
		if st.State == wire.StateTerminal || st.State == wire.StateUnknown {
			a.t.Fatalf("action %s ended before it was set up: %+v", handle, st.Result)
		}
		b, _ := os.ReadFile(path)
		if got := strings.Fields(string(b)); st.State == wire.StateRunning && len(got) >= lines {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.t.Fatalf("action %s never got running with %d line(s) in %s", handle, lines, path)
	return nil
}

// token is a random marker unique to one test target.
func token(t testing.TB) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "wmark" + hex.EncodeToString(b[:])
}

// marked returns the live (non-zombie) processes whose command line or
// environment contains mark: a /proc scan, independent of the broker.
func marked(t testing.TB, mark string) []int {
	t.Helper()
	names, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := "/proc/" + n.Name()
		if st, err := os.ReadFile(dir + "/stat"); err != nil || isZombie(st) {
			continue
		}
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		environ, _ := os.ReadFile(dir + "/environ")
		if bytes.Contains(cmdline, []byte(mark)) || bytes.Contains(environ, []byte(mark)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// killMarked SIGKILLs whatever carries mark, so that a failing test leaves
// nothing behind.
func killMarked(t testing.TB, mark string) {
	killPids(marked(t, mark))
}

// killPids SIGKILLs pids.
func killPids(pids []int) {
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// requireGone requires the action's group to be confirmed gone by the
// broker (result and receipt) and no process carrying mark to be left.
func requireGone(t *testing.T, d *brokerd, r *wire.Result, mark string) *receipt.Receipt {
	t.Helper()
	if !r.GroupGone {
		t.Errorf("group_gone is false: %+v", r.Error)
	}
	rc := d.Receipt(r.ReceiptID)
	if rc.GroupGone == nil {
		t.Errorf("receipt %s has no groupGone evidence", rc.ID)
	}
	if left := marked(t, mark); len(left) > 0 {
		t.Errorf("process(es) %v of the action are still alive after it ended", left)
	}
	return rc
}

// python returns "python3", which the broker resolves on its sanitized
// PATH, or skips when it is not installed there.
func python(t testing.TB) string {
	t.Helper()
	lookPath(t, "python3")
	return "python3"
}

// hasEvent reports whether the receipt records an event of type e.
func hasEvent(rc *receipt.Receipt, e receipt.EventType) bool {
	for _, ev := range rc.Events {
		if ev.Type == e {
			return true
		}
	}
	return false
}
