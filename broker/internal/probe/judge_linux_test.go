package probe

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/broker/lifecycle"
	"warrant/wire"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestProbeJudgesOnTheHost: a target that claims every forbidden attempt
// failed does not pass when the host objects say otherwise.
func TestProbeJudgesOnTheHost(t *testing.T) {
	h, err := newProbeHost(filepath.Join(t.TempDir(), "probe"))
	must(t, err)
	defer h.close()
	// What an escaped target would have done, claimed as failures.
	must(t, os.WriteFile(filepath.Join(h.outside, "written-by-grandchild"), nil, 0o600))
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", h.plan.TCPPort))
	must(t, err)
	defer c.Close()
	var out strings.Builder
	for _, who := range []string{"target", "grandchild"} {
		for _, check := range []string{"write_outside", "tcp_connect", "read_secret"} {
			out.WriteString(who + " " + check + " failed errno EACCES\n")
		}
	}
	checks := h.judge(lifecycle.Result{}, out.String())
	verdict := map[string]Check{}
	for _, c := range checks {
		verdict[c.Name+"/"+c.From] = c
	}
	for name, pass := range map[string]bool{"write_outside/target": true, "write_outside/grandchild": false,
		"tcp_connect/target": false, "read_secret/target": true, "signal/target": false, "launch/host": false} {
		if c := verdict[name]; c.Pass != pass {
			t.Errorf("%s: pass %v, want %v (%s: %s)", name, c.Pass, pass, c.Observed, c.Evidence)
		}
	}
	if c := verdict["signal/target"]; c.Observed != "not attempted" {
		t.Errorf("a missing line is %q", c.Observed)
	}
}

// TestProbeJudgesTheRecordOfRefusals: the record checks pass only when
// the run's record holds the attackers' counted sockets and the broker's
// refusal of the metadata write outside, under its resolved path.
func TestProbeJudgesTheRecordOfRefusals(t *testing.T) {
	h, err := newProbeHost(filepath.Join(t.TempDir(), "probe"))
	must(t, err)
	defer h.close()
	victim, err := filepath.EvalSymlinks(filepath.Join(h.outside, "meta"))
	must(t, err)
	full := &wire.Denials{Sources: []string{"broker", "filter-count"}, Total: 3, Records: []wire.Denial{
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_INET SOCK_STREAM", Rule: wire.RuleNoNetwork,
			Source: wire.SourceFilterCount, Count: 2},
		{Effect: wire.EffectMetadata, Call: "chmod", Object: victim, Rule: wire.RuleOutsideScope, Source: wire.SourceBroker, Count: 1},
	}}
	oneSocket := &wire.Denials{Sources: full.Sources, Total: 2, Records: []wire.Denial{full.Records[0], full.Records[1]}}
	oneSocket.Records[0].Count = 1
	otherPath := &wire.Denials{Sources: full.Sources, Total: 3, Records: []wire.Denial{full.Records[0], full.Records[1]}}
	otherPath.Records[1].Object = "/elsewhere/meta"
	for name, c := range map[string]struct {
		d             *wire.Denials
		socket, write bool
	}{
		"both recorded":         {full, true, true},
		"nothing watched":       {nil, false, false},
		"one attacker's socket": {oneSocket, false, true},
		"another path":          {otherPath, true, false},
	} {
		verdict := map[string]bool{}
		for _, ch := range h.denialChecks(lifecycle.Result{Denials: c.d}) {
			verdict[ch.Name] = ch.Pass
		}
		if verdict[RecordSocket] != c.socket || verdict[RecordMetadata] != c.write {
			t.Errorf("%s: %v, want socket %v write %v", name, verdict, c.socket, c.write)
		}
	}
}

// TestMarkerState: a stopped or ended marker is what a signal did; a
// sleeping one is not.
func TestMarkerState(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	must(t, cmd.Start())
	pid := cmd.Process.Pid
	defer cmd.Process.Kill()
	state := func(want string) {
		t.Helper()
		for range 1000 {
			if markerState(pid) == want {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("marker state %q, want %q", markerState(pid), want)
	}
	state("")
	must(t, cmd.Process.Signal(syscall.SIGSTOP))
	state("the marker process is T (stopped)")
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	state("the marker process is Z (zombie)")
	cmd.Wait()
	state("the marker process is gone")
}
