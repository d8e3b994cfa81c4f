//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRestartEndsTheSurvivorWithoutCgroupsAsUser: as uid 65534 no cgroup
// is writable here, so an action has no cgroup to be found by. The
// embedded broker of `broker run` is SIGKILLed while its target `sleep`
// runs; the target outlives it. The next broker on the state directory
// finds it by the origin recorded at launch (pid, start time, boot) and
// ends it: the process is dead on the host, the outcome stays unknown,
// the lease use stays spent, and the receipt log verifies with a signed
// survivors record saying it was identified by pid and start time, its
// pid, its exact command and that it is gone.
func TestRestartEndsTheSurvivorWithoutCgroupsAsUser(t *testing.T) {
	u := asNobody(t)
	arg := fmt.Sprintf("299.%d", os.Getpid()) // a command line no other process has
	cmd := u.command(filepath.Join(u.bin, "broker"), "run", "--approve", "--json", "--workspace", u.ws, "--", "/bin/sleep", arg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	want := "/bin/sleep " + arg
	var target int
	for deadline := time.Now().Add(daemonSafety); target == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		target = withCommand(want)
	}
	if target == 0 {
		t.Fatalf("the target never started:\n%s", stderr.String())
	}
	t.Cleanup(func() { killPids([]int{target}) })
	if cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", target)); bytes.Contains(cg, []byte("/warrant/")) {
		t.Skipf("skip: the target is in a warrant cgroup (%s); this test is of a host without one", bytes.TrimSpace(cg))
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !alive(target) {
		t.Fatalf("the target %d did not outlive its broker", target)
	}

	// The next broker on the state directory: a daemon, so that its log
	// and its listings can be read.
	serve := u.command(filepath.Join(u.bin, "broker"), "serve")
	log := &syncBuffer{}
	serve.Stdout, serve.Stderr = log, log
	if err := startDaemon(serve); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	for i := 0; ; i++ { // it logs its capability once open, survivors handled
		if strings.Contains(log.String(), "broker: capability ") {
			break
		}
		if i == dialAttempts {
			t.Fatalf("the next broker never listened:\n%s", log)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if alive(target) {
		t.Fatalf("the survivor %d is still running after the restart:\n%s", target, log)
	}
	if l := log.String(); !strings.Contains(l, strconv.Itoa(target)) || !strings.Contains(l, "were ended by") {
		t.Fatalf("the next broker did not say it ended %d:\n%s", target, l)
	}
	actions := wholeListing[struct {
		Handle     string `json:"handle"`
		State      string `json:"state"`
		Executable string `json:"executable"`
	}](t, "actions", u.readCLI("actions", "--json"))
	handle := ""
	for _, a := range actions {
		if a.Executable == "/bin/sleep" {
			handle = a.Handle
			if a.State != "unknown" {
				t.Fatalf("after ending its survivor the action must stay unknown: %+v", a)
			}
		}
	}
	leases := wholeListing[struct {
		UsesLeft *int `json:"uses_left"`
	}](t, "leases", u.readCLI("leases", "--all", "--json"))
	if len(leases) == 0 {
		t.Fatal("no lease listed")
	}
	for _, l := range leases {
		if l.UsesLeft == nil || *l.UsesLeft != 0 {
			t.Fatalf("a lease use was given back: %+v", leases)
		}
	}
	var rep struct {
		OK        bool `json:"ok"`
		Survivors int  `json:"survivors"`
	}
	if err := json.Unmarshal([]byte(u.readCLI("receipts", "verify", "--json")), &rep); err != nil || !rep.OK || rep.Survivors != 1 {
		t.Fatalf("receipts verify: %+v %v", rep, err)
	}
	listed := wholeListing[survivorsEntry](t, "receipts list", u.readCLI("receipts", "list", "--json"))
	found := false
	for _, e := range listed {
		if e.Kind == "survivors" {
			found = true
			if s := e.Survivors; s == nil || s.Action != handle || s.IdentifiedBy != "pid-start" || !s.Gone || len(s.Pids) != 1 ||
				s.Pids[0] != target || len(s.Commands) != 1 || s.Commands[0] != want {
				t.Fatalf("the survivors record of %s: %+v", handle, e)
			}
		}
	}
	if !found {
		t.Fatalf("no survivors record in the log: %+v", listed)
	}
}

// withCommand is the pid of a live process whose command line is cmdline,
// or 0.
func withCommand(cmdline string) int {
	names, _ := os.ReadDir("/proc")
	for _, n := range names {
		pid, err := strconv.Atoi(n.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + n.Name() + "/cmdline")
		if string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '})) == cmdline && alive(pid) {
			return pid
		}
	}
	return 0
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !isZombie(st) && syscall.Kill(pid, 0) == nil
}
