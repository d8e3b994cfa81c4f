package broker

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"warrant/broker/lifecycle"
	"warrant/broker/runner"

	"warrant/broker/internal/probe"
	"warrant/wire"
)

// TestUnverifiedRefusesEverySubmit: a broker that has not verified its
// host refuses every submit with SANDBOX_UNAVAILABLE before anything else:
// a matching lease keeps its uses, nothing is launched or recorded, and no
// approval is asked for a new request.
func TestUnverifiedRefusesEverySubmit(t *testing.T) {
	r := newRig(t)
	_, l := r.approved(r.request(), 3)
	r.b.setCapability(probe.Unverified("test: not probed"))
	_, err := r.cl.Submit(r.workspace, r.request())
	wantCode(t, err, wire.CodeSandboxUnavailable)
	_, err = r.cl.Submit(r.workspace, r.request("new"))
	wantCode(t, err, wire.CodeSandboxUnavailable)
	if !strings.Contains(err.Error(), "not probed") {
		t.Fatalf("the refusal does not say why: %v", err)
	}
	if got := r.lease(l.ID).UsesLeft; got != 3 {
		t.Fatalf("uses left %d, want 3", got)
	}
	acts, err := r.cl.List(wire.ListActions, false)
	must(t, err)
	listed, err := r.cl.List(wire.ListApprovals, false)
	must(t, err)
	pending := 0
	for _, a := range listed.Approvals {
		if a.State == wire.RequestPending {
			pending++
		}
	}
	if len(acts.Actions) != 0 || len(r.exec.launched) != 0 || pending != 0 {
		t.Fatalf("refused submits left records: actions %+v, launched %d, approvals %+v", acts.Actions, len(r.exec.launched), listed.Approvals)
	}
}

// TestExecutorWithoutProbeStaysUnverified: without the test seam, a broker
// whose executor cannot run the probe is unverified and refuses.
func TestExecutorWithoutProbeStaysUnverified(t *testing.T) {
	r := newProbedRig(t)
	if st := r.b.Capability().State; st != wire.Unverified {
		t.Fatalf("state %s, want unverified", st)
	}
	_, err := r.cl.Submit(r.workspace, r.request())
	wantCode(t, err, wire.CodeSandboxUnavailable)
}

// silentProber runs nothing: every probe fails, as a broken chain would.
type silentProber struct {
	holdExecutor
	probes int
}

func (p *silentProber) Probe(context.Context, *runner.Launch, io.Writer, io.Writer) lifecycle.Result {
	p.probes++
	return lifecycle.Result{Outcome: wire.KnownNotExecuted, Err: wire.Errorf(wire.CodeSandboxUnavailable, "test: no launcher")}
}
func (p *silentProber) LauncherDigest() string { return strings.Repeat("ab", 32) }
func (p *silentProber) Cgroups() string        { return "" }
func (p *silentProber) CgroupDirs() []string   { return nil }
func (p *silentProber) Limits() lifecycle.Enforcement {
	return lifecycle.Enforcement{Missing: "test: no cgroups"}
}

// TestProbeFailureIsUnavailableAndRetried: a chain that runs nothing
// makes every check fail; the report is unavailable (never partial),
// stored, names the failed checks, and is not reused: the next start
// probes again.
func TestProbeFailureIsUnavailableAndRetried(t *testing.T) {
	p := &silentProber{}
	self, err := os.Executable()
	must(t, err)
	r := newProbedRig(t, func(c *Config) { c.Executor, c.ProbeTarget = p, []string{self, "unused"} })
	rep := r.b.Capability()
	if rep.State != wire.Unavailable || p.probes != 3 || !slices.Contains(rep.Failed, "launch/host@in-place") ||
		!slices.Contains(rep.Failed, "ptrace/grandchild@sealed-snapshot") || len(rep.Failed) != len(rep.Checks) {
		t.Fatalf("report %+v after %d probes", rep, p.probes)
	}
	stored, err := storedReport(context.Background(), r.b.j)
	must(t, err)
	if stored == nil || stored.State != wire.Unavailable || stored.Binding != rep.Binding {
		t.Fatalf("stored %+v", stored)
	}
	again, err := r.b.EnsureCapability(context.Background(), false)
	must(t, err)
	if p.probes != 6 || again.State != wire.Unavailable { // a battery under each binding and the egress battery, twice
		t.Fatalf("an unavailable report was reused: %d probes, state %s", p.probes, again.State)
	}
	_, err = r.cl.Submit(r.workspace, r.request())
	wantCode(t, err, wire.CodeSandboxUnavailable)
}
