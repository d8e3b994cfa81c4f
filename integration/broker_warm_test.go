//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/wire"
)

// warmLauncher waits for the daemon's warm launcher: its child waiting in
// a hold (a cgroup v2 directory warm-…) or, without cgroup v2, its child
// that is no action's (cgroup lines without the handle). It returns its
// pid and the hold's directory ("" without cgroup v2).
func warmLauncher(t *testing.T, d *brokerd, not int) (int, string) {
	t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for time.Now().Before(deadline) {
		for _, pid := range children(d.Pid()) {
			cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
			if err != nil || pid == not {
				continue
			}
			for _, line := range strings.Split(string(cg), "\n") {
				if rest, ok := strings.CutPrefix(line, "0::"); ok && strings.Contains(rest, "/warm-") {
					return pid, rest
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("the daemon has no warm launcher after %s\n%s", daemonSafety, d.log)
	return 0, ""
}

// children lists pid's children, from every one of its threads.
func children(pid int) []int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	var out []int
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// requireV2 skips unless this host gives the daemon a cgroup v2 directory
// (the hold lives there).
func requireV2(t *testing.T) {
	t.Helper()
	if self, _ := os.ReadFile("/proc/self/cgroup"); !strings.Contains(string(self), "\n0::/") && !strings.HasPrefix(string(self), "0::/") {
		t.Skip("skip: no cgroup v2 hierarchy here, so no hold to find the warm launcher in")
	}
}

// TestWarmLauncherBecomesTheNextActionInItsCgroups: the daemon keeps a
// launcher started ahead, in its hold; the next action's target is that
// very process (the pid it prints), and it runs inside the action's own
// cgroups, v2 and v1, never the hold. One killed while it waits is
// reaped, and the next action starts its own and runs. A stopped daemon
// ends its warm launcher and removes the hold.
func TestWarmLauncherBecomesTheNextActionInItsCgroups(t *testing.T) {
	requireV2(t)
	d := startBroker(t, "")
	a := d.newAgent(t)

	// The target writes its pid and waits for the test to have read its
	// cgroups from the host (/proc is not in its policy).
	req := a.request(wire.ProfileShort, "sh", "-c", `echo $$ > pid; while [ ! -e go ]; do sleep 0.01; done; echo $$`)
	run := func() (string, *wire.Result, []string) {
		t.Helper()
		os.Remove(filepath.Join(a.WS, "go"))
		os.Remove(filepath.Join(a.WS, "pid"))
		h := a.Start(req, 10)
		pid := a.awaitRunning(h, filepath.Join(a.WS, "pid"), 1)[0]
		cg, err := os.ReadFile("/proc/" + pid + "/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(a.WS, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r := a.End(h)
		if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("outcome %s %+v, want exited 0\nstderr: %s", r.Outcome, r.Error, r.Stderr.Text)
		}
		return h, r, append([]string{pid}, strings.Split(strings.TrimSpace(string(cg)), "\n")...)
	}
	run()

	warm, hold := warmLauncher(t, d, 0)
	h, _, lines := run()
	if lines[0] != strconv.Itoa(warm) {
		t.Fatalf("the target ran as pid %s, not as the warm launcher %d", lines[0], warm)
	}
	var in []string
	for _, line := range lines[1:] {
		if strings.Contains(line, "/warm-") {
			t.Fatalf("the target ran in the hold: %q", line)
		}
		if strings.HasPrefix(line, "0::") || strings.Contains(line, ":memory:") || strings.Contains(line, ":pids:") {
			if !strings.HasSuffix(line, "/"+h) {
				t.Fatalf("the target's cgroup %q is not its action's (%s)", line, h)
			}
			in = append(in, line)
		}
	}
	if len(in) == 0 {
		t.Fatalf("the target is in no cgroup of its action: %q", lines[1:])
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/unified", hold)); err != nil {
		t.Fatalf("the hold %s: %v", hold, err)
	}

	// A warm launcher killed while it waits: the next action runs anyway.
	next, _ := warmLauncher(t, d, warm)
	if err := syscall.Kill(next, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, _, lines = run(); lines[0] == strconv.Itoa(next) {
		t.Fatalf("the action ran as the killed warm launcher %d", next)
	}

	last, hold := warmLauncher(t, d, next)
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(daemonSafety):
		t.Fatalf("the daemon did not stop on SIGTERM\n%s", d.log)
	}
	if alive(last) {
		t.Fatalf("the stopped daemon left its warm launcher %d running", last)
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/unified", hold)); !os.IsNotExist(err) {
		t.Fatalf("the stopped daemon left its hold %s: %v", hold, err)
	}
}

// TestWarmLauncherOfAKilledDaemonEndsAndItsHoldGoes: a daemon killed with
// SIGKILL leaves its warm launcher with the other end of its request
// socket closed; it exits by itself, and the next daemon on the state
// directory removes the hold without calling anything a survivor.
func TestWarmLauncherOfAKilledDaemonEndsAndItsHoldGoes(t *testing.T) {
	requireV2(t)
	state := filepath.Join(t.TempDir(), "state")
	d := startBroker(t, state)
	warm, hold := warmLauncher(t, d, 0)
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	deadline := time.Now().Add(daemonSafety)
	for alive(warm) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if alive(warm) {
		t.Fatalf("the warm launcher %d of a killed daemon is still running", warm)
	}
	d2 := startBroker(t, state)
	a := d2.newAgent(t)
	if _, r := a.Run(a.request(wire.ProfileShort, "true")); r.Outcome != wire.Exited {
		t.Fatalf("outcome %s %+v after the restart", r.Outcome, r.Error)
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/unified", hold)); !os.IsNotExist(err) {
		t.Fatalf("the killed daemon's hold %s is still there after the restart: %v", hold, err)
	}
	if strings.Contains(d2.log.String(), "warm-") {
		t.Fatalf("the restarted daemon reported the hold:\n%s", d2.log)
	}
}
