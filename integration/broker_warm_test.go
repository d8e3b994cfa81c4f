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

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
	"warrant/wire"
)

// warmLauncher waits for the daemon's warm launcher: its child all of
// whose warrant cgroups are a slot's (warm-…, v2 and v1), not an
// action's. It returns its pid and its cgroup v2 directory, relative to
// the v2 mount.
func warmLauncher(t *testing.T, d *brokerd, not int) (int, string) {
	t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for time.Now().Before(deadline) {
		if pid, v2 := slotChild(d.Pid(), not); pid != 0 {
			return pid, v2
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("the daemon has no warm launcher after %s\n%s", daemonSafety, d.log)
	return 0, ""
}

// slotChild is a child of parent other than not all of whose warrant
// cgroups are a slot's (warm-…, v2 and v1), with its cgroup v2 directory
// relative to the v2 mount, or 0 when there is none now.
func slotChild(parent, not int) (int, string) {
	for _, pid := range children(parent) {
		cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		if err != nil || pid == not {
			continue
		}
		v2, slot := "", true
		for _, line := range strings.Split(string(cg), "\n") {
			if strings.Contains(line, "/warrant/") && !strings.Contains(line, "/warm-") {
				slot = false
			}
			if rest, ok := strings.CutPrefix(line, "0::"); ok && strings.Contains(rest, "/warm-") {
				v2 = rest
			}
		}
		if slot && v2 != "" {
			return pid, v2
		}
	}
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
// (the tests find a warm launcher by its slot's v2 directory).
func requireV2(t *testing.T) {
	t.Helper()
	if self, _ := os.ReadFile("/proc/self/cgroup"); !strings.Contains(string(self), "\n0::/") && !strings.HasPrefix(string(self), "0::/") {
		t.Skip("skip: no cgroup v2 hierarchy here, so no slot directory to find the warm launcher by")
	}
}

// TestWarmLauncherBecomesTheNextActionInItsCgroups: the daemon keeps a
// launcher started ahead in a slot's cgroups (warm-…, v2 and v1, made
// with the profile's limits); the next action's target is that very
// process (the pid it prints), in the v2 directory it was started in and
// in v1 directories renamed to the action's handle, with the profile's
// limits. One killed while it waits is reaped, and the next action
// starts its own and runs. A stopped daemon ends its warm launcher and
// removes its cgroups.
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

	warm, slot := warmLauncher(t, d, 0)
	h, _, lines := run()
	if lines[0] != strconv.Itoa(warm) {
		t.Fatalf("the target ran as pid %s, not as the warm launcher %d", lines[0], warm)
	}
	v1 := 0
	for _, line := range lines[1:] {
		switch {
		case strings.HasPrefix(line, "0::"):
			if line != "0::"+slot {
				t.Fatalf("the target's cgroup v2 %q is not the one the warm launcher was started in (%s)", line, slot)
			}
		case strings.Contains(line, ":memory:") || strings.Contains(line, ":pids:"):
			if !strings.HasSuffix(line, "/"+h) {
				t.Fatalf("the target's cgroup %q is not its action's (%s)", line, h)
			}
			v1++
		}
	}
	if v1 == 0 {
		t.Skip("skip: no cgroup v1 memory or pids hierarchy here (a warm launcher is kept only with one)")
	}

	// A warm launcher killed while it waits: the next action runs anyway.
	// The action is submitted once the kill has taken, as take sees it:
	// the whole process has exited (its pidfd is readable), every thread
	// of it. A zombie thread-group leader is not enough: the launcher's
	// other threads may still be exiting, and waitid reports the process
	// only after them. Until then the action would take the launcher and
	// have it die under its request, which ends it known_not_executed.
	next, _ := warmLauncher(t, d, warm)
	pidfd, err := unix.PidfdOpen(next, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if err := syscall.Kill(next, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var n int
	err = retry.EINTR(func() (err error) {
		n, err = unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, int(daemonSafety.Milliseconds()))
		return err
	})
	if err != nil || n != 1 {
		t.Fatalf("the warm launcher %d has not exited %s after SIGKILL: %v", next, daemonSafety, err)
	}
	if _, _, lines = run(); lines[0] == strconv.Itoa(next) {
		t.Fatalf("the action ran as the killed warm launcher %d", next)
	}

	last, slot := warmLauncher(t, d, next)
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(daemonSafety):
		t.Fatalf("the daemon did not stop on SIGTERM\n%s", d.log)
	}
	if alive(last) {
		t.Fatalf("the stopped daemon left its warm launcher %d running", last)
	}
	if left := slotLeft(d.State, slot); left != "" {
		t.Fatalf("the stopped daemon left its slot's cgroup %s", left)
	}
}

// TestWarmLauncherOfAKilledDaemonEndsAndItsSlotGoes: a daemon killed with
// SIGKILL leaves its warm launcher with the other end of its request
// socket closed; it exits by itself, and the next daemon on the state
// directory removes its slot's cgroups (v2 and v1) without calling
// anything a survivor.
func TestWarmLauncherOfAKilledDaemonEndsAndItsSlotGoes(t *testing.T) {
	requireV2(t)
	state := filepath.Join(t.TempDir(), "state")
	d := startBroker(t, state)
	a := d.newAgent(t)
	if _, r := a.Run(a.request(wire.ProfileShort, "true")); r.Outcome != wire.Exited {
		t.Fatalf("outcome %s %+v", r.Outcome, r.Error)
	}
	warm, slot := warmLauncher(t, d, 0) // the slot made after the first action
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
	a = d2.newAgent(t)
	if _, r := a.Run(a.request(wire.ProfileShort, "true")); r.Outcome != wire.Exited {
		t.Fatalf("outcome %s %+v after the restart", r.Outcome, r.Error)
	}
	if left := slotLeft(state, slot); left != "" {
		t.Fatalf("the killed daemon's slot's cgroup %s is still there after the restart", left)
	}
	if strings.Contains(d2.log.String(), "warm-") {
		t.Fatalf("the restarted daemon reported the slot:\n%s", d2.log)
	}
}

// slotLeft returns a directory of the slot whose v2 directory is slot
// (relative to the v2 mount) that still exists, v2 or v1, or "".
func slotLeft(state, slot string) string {
	dirs := []string{filepath.Join("/sys/fs/cgroup/unified", slot)}
	for _, h := range []string{"memory", "pids"} {
		dirs = append(dirs, filepath.Join("/sys/fs/cgroup", h, "warrant", scopeOf(state), filepath.Base(slot)))
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	return ""
}

// TestWarmSlotOfAKilledDaemonsActionIsEndedUnderItsHandle: an action that
// took a warm slot (its cgroup v2 directory keeps the slot's name, its v1
// directories carry the handle) outlives its daemon's SIGKILL; the next
// daemon finds it by its v1 directories, ends it and reports it as that
// action's, not as a warm launcher's.
func TestWarmSlotOfAKilledDaemonsActionIsEndedUnderItsHandle(t *testing.T) {
	requireV2(t)
	d1, a, mark := markedAgent(t)
	if _, r := a.Run(a.request(wire.ProfileShort, "true")); r.Outcome != wire.Exited {
		t.Fatalf("outcome %s %+v", r.Outcome, r.Error)
	}
	warm, slot := warmLauncher(t, d1, 0)
	h := a.Start(a.request(wire.ProfileShort, "sh", "-c", `echo $$ > pid; while :; do sleep 1; done`, mark), 1)
	pid := a.awaitRunning(h, filepath.Join(a.WS, "pid"), 1)[0]
	if pid != strconv.Itoa(warm) {
		t.Fatalf("the action runs as pid %s, not as the warm launcher %d", pid, warm)
	}
	cg, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cg), "0::"+slot+"\n") || !strings.Contains(string(cg), "/"+h+"\n") {
		t.Skipf("skip: the action is not in the slot's v2 directory and in v1 directories named by its handle:\n%s", cg)
	}
	d2, _, orphans := restartAfterSIGKILL(t, d1, a, mark)
	if len(orphans) == 0 {
		t.Fatal("no process of the action survived the daemon's SIGKILL")
	}
	if alive := marked(t, mark); len(alive) > 0 {
		t.Fatalf("the action's process(es) %v are alive after the restart:\n%s", alive, d2.log)
	}
	log := d2.log.String()
	if !strings.Contains(log, h) || !strings.Contains(log, "were ended by") || !strings.Contains(log, pid) {
		t.Fatalf("the new daemon did not report the action %s's process %s as ended:\n%s", h, pid, log)
	}
	if strings.Contains(log, "warm-") {
		t.Fatalf("the new daemon reported the slot, not the action:\n%s", log)
	}
}
