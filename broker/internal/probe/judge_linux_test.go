package broker

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/wire"
)

// silentProber runs nothing: every probe fails, as a broken chain would.
type silentProber struct {
	holdExecutor
	probes int
}

func (p *silentProber) Probe(context.Context, *Launch, io.Writer, io.Writer) ProbeRun {
	p.probes++
	return ProbeRun{Outcome: wire.KnownNotExecuted, Err: wire.Errorf(wire.CodeSandboxUnavailable, "test: no launcher")}
}
func (p *silentProber) LauncherDigest() string { return strings.Repeat("ab", 32) }
func (p *silentProber) Cgroups() string        { return "" }

// TestProbeFailureIsUnavailableAndRetried: a chain that runs nothing
// makes every check fail; the report is unavailable (never partial),
// stored, names the failed checks, and is not reused: the next start
// probes again.
func TestProbeFailureIsUnavailableAndRetried(t *testing.T) {
	p := &silentProber{}
	self, err := os.Executable()
	must(t, err)
	r := newRig(t, func(c *Config) {
		c.InsecureSkipProbeForTests, c.Executor, c.ProbeTarget = false, p, []string{self, "unused"}
	})
	rep := r.b.Capability()
	if rep.State != wire.Unavailable || p.probes != 1 || !slices.Contains(rep.Failed, "launch/host") ||
		!slices.Contains(rep.Failed, "ptrace/grandchild") || len(rep.Failed) != len(rep.Checks) {
		t.Fatalf("report %+v after %d probes", rep, p.probes)
	}
	stored, err := r.b.j.LatestCapabilityReport(context.Background())
	must(t, err)
	if stored == nil || stored.State != wire.Unavailable || stored.Binding != rep.Binding {
		t.Fatalf("stored %+v", stored)
	}
	again, err := r.b.EnsureCapability(context.Background(), false)
	must(t, err)
	if p.probes != 2 || again.State != wire.Unavailable {
		t.Fatalf("an unavailable report was reused: %d probes, state %s", p.probes, again.State)
	}
	_, err = r.cl.Submit(r.workspace, r.request())
	wantCode(t, err, wire.CodeSandboxUnavailable)
}

// TestProbeJudgesOnTheHost: a target that claims every forbidden attempt
// failed does not pass when the host objects say otherwise.
func TestProbeJudgesOnTheHost(t *testing.T) {
	r := newRig(t)
	h, err := r.b.newProbeHost()
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
	checks := h.judge(ProbeRun{}, out.String())
	verdict := map[string]ProbeCheck{}
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
