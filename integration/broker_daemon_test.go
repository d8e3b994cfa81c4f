//go:build linux

package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warrant/broker/client"
	"warrant/wire"
)

// brokerCmd is `broker ARGS...` with the launcher TestMain built; its
// stdout and stderr are collected.
func brokerCmd(args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(bins.broker, args...)
	cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

// TestRefusedSecondBrokerLeavesTheDaemonWhole starts a daemon, then a
// second `broker serve` and an embedded `broker run` (which finds no
// agent socket, so it tries to open a broker itself) on the same state
// directory. Each must be refused with exit 1 and its sentence, and leave
// the daemon's cgroup directories on the host; the daemon then runs an
// action in its cgroups: the host finds the target in them (its
// /proc/PID/cgroup), its marker file is on the host and its outcome is
// exited 0.
func TestRefusedSecondBrokerLeavesTheDaemonWhole(t *testing.T) {
	d := startBroker(t, "")
	dirs := scopeCgroups(d.State)
	if len(dirs) == 0 {
		t.Skip("skip: the daemon made no cgroup directory on this host (no writable cgroup hierarchy)")
	}
	a := d.newAgent(t)
	a.cl.List(wire.ListApprovals, false) // connect the operator socket before agent.sock goes

	cmd, _, errb := brokerCmd("serve", "--state", d.State)
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(errb.String(), "another broker is using "+d.State) {
		t.Fatalf("second broker serve: %v, want exit 1 saying another broker is using %s; stderr:\n%s", err, d.State, errb)
	}
	requireDirs(t, "the refused broker serve", dirs)

	// Without its agent socket on disk, `broker run` opens an embedded
	// broker, which loses to the daemon's lock. The daemon keeps serving
	// the connections it has.
	agentSock, _ := client.SocketPaths(d.State)
	if err := os.Remove(agentSock); err != nil {
		t.Fatal(err)
	}
	cmd, _, errb = brokerCmd("run", "--state", d.State, "--workspace", a.WS, "--", "true")
	err = cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(errb.String(), "another broker is using "+d.State) {
		t.Fatalf("embedded broker run: %v, want exit 1 saying another broker is using %s; stderr:\n%s", err, d.State, errb)
	}
	requireDirs(t, "the refused embedded broker run", dirs)

	// The target holds until the host has seen where it runs.
	mark := token(t)
	h := a.Start(a.request(wire.ProfileShort, "sh", "-c", "echo "+mark+" > marker; while [ ! -e go ]; do sleep 0.01; done"), 1)
	a.awaitRunning(h, filepath.Join(a.WS, "marker"), 1)
	pids := marked(t, mark)
	if len(pids) == 0 {
		t.Fatalf("no process of action %s is running", h)
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if want := "/warrant/" + scopeOf(d.State) + "/" + h + "\n"; !strings.Contains(string(cg), want) {
		t.Errorf("the target (pid %d) is not in the daemon's cgroups for it (…%s):\n%s", pids[0], want, cg)
	}
	if err := os.WriteFile(filepath.Join(a.WS, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := a.End(h)
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("action %s: outcome %s error %+v, want exited 0\nstderr: %s", h, r.Outcome, r.Error, r.Stderr.Text)
	}
	if b, err := os.ReadFile(filepath.Join(a.WS, "marker")); err != nil || strings.TrimSpace(string(b)) != mark {
		t.Fatalf("marker file on the host: %q %v", b, err)
	}
	requireGone(t, d, r, mark)
}

// requireDirs requires every directory of dirs to exist on the host.
func requireDirs(t *testing.T, after string, dirs []string) {
	t.Helper()
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("after %s, the daemon's cgroup directory %s is gone: %v", after, dir, err)
		}
	}
}
