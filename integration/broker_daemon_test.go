//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// Nothing was submitted: `run`'s contract for a failure before the
	// submit is 125, not executed.
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 125 || !strings.Contains(errb.String(), "another broker is using "+d.State) {
		t.Fatalf("embedded broker run: %v, want exit 125 saying another broker is using %s; stderr:\n%s", err, d.State, errb)
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

// TestLostCgroupIsSaidAndRefusesHonestly: an action whose cgroup cannot
// be made (the daemon's cgroup v2 directory takes no more children:
// cgroup.max.descendants 0) is known_not_executed with IO_FAILED, runs
// nothing (no marker on the host), and keeps its use spent; the next one
// runs on the same lease. A directory removed under the running daemon
// is named by `broker status` as missing, until its next action makes it
// again.
func TestLostCgroupIsSaidAndRefusesHonestly(t *testing.T) {
	d := startBroker(t, "")
	v2 := "/sys/fs/cgroup/unified/warrant/" + scopeOf(d.State)
	if self, _ := os.ReadFile("/proc/self/cgroup"); !strings.Contains(string(self), "\n0::/\n") {
		t.Skip("skip: this test places the daemon's cgroup v2 directory under /sys/fs/cgroup/unified, this process's cgroup v2 being its root")
	}
	if _, err := os.Stat(filepath.Join(v2, "cgroup.max.descendants")); err != nil {
		t.Skipf("skip: the daemon has no cgroup v2 directory to refuse children: %v", err)
	}
	a := d.newAgent(t)
	// Standard: a warm slot the capability probe's last action left (a
	// short one's) is not this action's, so it needs cgroups of its own.
	req := a.request(wire.ProfileStandard, "sh", "-c", "echo ran > marker")

	if err := os.WriteFile(filepath.Join(v2, "cgroup.max.descendants"), []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	h := a.Start(req, 2)
	r := a.End(h)
	// Every action's end, a refused one's too, is followed by the making
	// of the next warm launcher's slot (the first one's, here), which
	// must fail as well: the directory takes children again only once the
	// daemon is quiet, its attempt made.
	d.Quiet()
	os.WriteFile(filepath.Join(v2, "cgroup.max.descendants"), []byte("max"), 0)
	if r.Outcome != wire.KnownNotExecuted || r.Error == nil || r.Error.Code != wire.CodeIOFailed || !strings.Contains(r.Error.Message, "cgroup") {
		t.Fatalf("action %s without its cgroup: outcome %s error %+v, want known_not_executed IO_FAILED naming the cgroup", h, r.Outcome, r.Error)
	}
	if _, err := os.Stat(filepath.Join(a.WS, "marker")); !os.IsNotExist(err) {
		t.Fatalf("the target ran without its cgroup: marker %v", err)
	}
	if left := usesLeft(t, a); left != 1 {
		t.Fatalf("uses left after the refused action: %d, want 1 (the use stays spent)", left)
	}
	if out, _ := d.CLI("status"); strings.Contains(out, "MISSING") {
		t.Fatalf("broker status names a cgroup directory missing while all are there:\n%s", out)
	}

	// The v2 directory holds no spare (broker/lifecycle makes them in
	// cgroup v1 alone), and no warm launcher's slot yet: the first was to
	// be made after the refused action, while the directory took no
	// children. So it can be taken away whole.
	if err := os.Remove(v2); err != nil {
		t.Fatal(err)
	}
	out, code := d.CLI("status")
	if code != 0 || !strings.Contains(out, "MISSING NOW: "+v2+" is gone") || strings.Count(out, "MISSING NOW") != 1 {
		t.Errorf("broker status (exit %d) does not say %s, and it alone, is missing:\n%s", code, v2, out)
	}
	out, _ = d.CLI("status", "--json")
	var rep struct {
		Missing []string `json:"cgroup_missing"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Missing) != 1 || rep.Missing[0] != v2 {
		t.Errorf("broker status --json: cgroup_missing %v (%v), want [%s]", rep.Missing, err, v2)
	}

	h, r = a.Run(req) // the same lease's second use
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("action %s after the directories came back: outcome %s error %+v, want exited 0", h, r.Outcome, r.Error)
	}
	if b, err := os.ReadFile(filepath.Join(a.WS, "marker")); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker file on the host: %q %v", b, err)
	}
	requireDirs(t, "the next action", []string{v2})
	if _, slot := warmLauncher(t, d, 0); !strings.HasPrefix(slot, strings.TrimPrefix(v2, "/sys/fs/cgroup/unified")+"/warm-") {
		t.Fatalf("the daemon's next warm launcher waits in %s, not in a slot under %s", slot, v2)
	}
	if out, _ := d.CLI("status"); strings.Contains(out, "MISSING") {
		t.Fatalf("broker status still names a cgroup directory missing:\n%s", out)
	}
	if left := usesLeft(t, a); left != 0 {
		t.Fatalf("uses left after both actions: %d, want 0", left)
	}
}

// usesLeft is the uses left of the one lease of a's daemon.
func usesLeft(t *testing.T, a *agent) uint32 {
	t.Helper()
	l, err := a.cl.List(wire.ListLeases, false)
	if err != nil || len(l.Leases) != 1 {
		t.Fatalf("leases: %+v %v, want one", l, err)
	}
	return l.Leases[0].UsesLeft
}

// TestIdleConnectionsDoNotLockOutTheOperator opens 200 idle connections
// to each of the daemon's sockets; the real operator command `broker
// approvals` and an agent's `broker run` still succeed. The idle
// connections the daemon let go were told so (BUSY) and closed.
func TestIdleConnectionsDoNotLockOutTheOperator(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	agentSock, operatorSock := client.SocketPaths(d.State)
	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			c.Close()
		}
	})
	for _, p := range []string{operatorSock, agentSock} {
		for range 200 {
			c, err := net.Dial("unix", p)
			if err != nil {
				t.Fatalf("connection %d to %s: %v", len(idle), p, err)
			}
			idle = append(idle, c)
		}
	}
	out, code := d.CLI("approvals", "--json")
	if code != 0 {
		t.Fatalf("broker approvals behind 200 idle connections: exit %d\n%s", code, out)
	}
	if _, _, code := a.run(wire.ProfileShort, "true"); code != 0 {
		t.Fatalf("broker run behind 200 idle connections: exit %d", code)
	}
	busy := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		m, err := wire.ReadFrame(c, wire.MaxAgentFrame, wire.ReplyChannel)
		if we, ok := m.(*wire.Error); ok && we.Code == wire.CodeBusy {
			busy++
		} else if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, io.EOF) {
			t.Errorf("an idle connection read %v", err)
		}
	}
	if busy == 0 {
		t.Errorf("no idle connection was told BUSY")
	}
	t.Logf("%d of %d idle connections were let go with BUSY", busy, len(idle))
}
