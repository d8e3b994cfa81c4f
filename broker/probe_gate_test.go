package broker

import (
	"strings"
	"testing"

	"warrant/wire"
)

// TestUnverifiedRefusesEverySubmit: a broker that has not verified its
// host refuses every submit with SANDBOX_UNAVAILABLE before anything else:
// a matching lease keeps its uses, nothing is launched or recorded, and no
// approval is asked for a new request.
func TestUnverifiedRefusesEverySubmit(t *testing.T) {
	r := newRig(t)
	_, l := r.approved(r.request(), 3)
	r.b.setCapability(unverified("test: not probed"))
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
	pending, err := r.cl.List(wire.ListApprovals, false)
	must(t, err)
	if len(acts.Actions) != 0 || len(r.exec.launched) != 0 || len(pending.Approvals) != 0 {
		t.Fatalf("refused submits left records: actions %+v, launched %d, approvals %+v", acts.Actions, len(r.exec.launched), pending.Approvals)
	}
}

// TestExecutorWithoutProbeStaysUnverified: without the test seam, a broker
// whose executor cannot run the probe is unverified and refuses.
func TestExecutorWithoutProbeStaysUnverified(t *testing.T) {
	r := newRig(t, func(c *Config) { c.InsecureSkipProbeForTests = false })
	if st := r.b.Capability().State; st != wire.Unverified {
		t.Fatalf("state %s, want unverified", st)
	}
	_, err := r.cl.Submit(r.workspace, r.request())
	wantCode(t, err, wire.CodeSandboxUnavailable)
}
