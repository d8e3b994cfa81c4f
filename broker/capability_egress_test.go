package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"warrant/broker/internal/probe"
	"warrant/wire"
)

// TestEgressUnsupportedRefusesGrantsOnly: on a host verified with egress
// unsupported (probe.Feature), a command without egress still asks, is
// approved and runs; everything that carries an egress grant is refused
// with SANDBOX_UNAVAILABLE and the probe's reason, before anything is
// asked, granted or consumed: a submit asking for egress, leases with
// egress granted before the host was probed anew (asked for, and set by
// the operator for a command that asked none), an approval that sets
// a list, and one of a request that asked for one. Approving that
// request without network (an empty list) still works, for the command
// asked again without egress.
func TestEgressUnsupportedRefusesGrantsOnly(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	v := r.wantApproval(r.egressRequest("127.0.0.1:4873"))
	granted := r.grant(v.ID, 0, "127.0.0.1:4873") // before the probe found egress missing
	amended := r.grant(r.wantApproval(r.request("amend")).ID, 0, "127.0.0.1:4873")
	plain := r.wantApproval(r.request("plain"))
	asking := r.wantApproval(r.egressRequest("127.0.0.1:5000"))

	const lack = "test: this kernel has no thread pidfds"
	r.b.setCapability(&probe.Report{State: wire.Verified, Features: []probe.Feature{
		{Name: probe.FeatureEgress, Unsupported: lack, Fix: "test: use Linux 6.9"}}})
	refused := func(what string, err error) {
		t.Helper()
		wantCode(t, err, wire.CodeSandboxUnavailable)
		if msg := err.Error(); !strings.Contains(msg, "egress leases are not available on this host") || !strings.Contains(msg, lack) ||
			!strings.Contains(msg, "test: use Linux 6.9") {
			t.Fatalf("%s: the refusal does not say why: %v", what, err)
		}
	}
	pending := func() int {
		listed, err := r.cl.List(wire.ListApprovals, false)
		must(t, err)
		n := 0
		for _, a := range listed.Approvals {
			if a.State == wire.RequestPending {
				n++
			}
		}
		return n
	}
	before := pending()

	_, err := r.cl.Submit(r.workspace, r.egressRequest("127.0.0.1:4873"))
	refused("a submit its lease with egress matches", err)
	_, err = r.cl.Submit(r.workspace, r.request("amend"))
	refused("a submit without egress whose lease the operator granted with egress", err)
	_, err = r.cl.Submit(r.workspace, r.egressRequest("127.0.0.1:6000"))
	refused("a new submit asking for egress", err)
	_, err = r.cl.Grant(ctx, &wire.Approve{RequestID: plain.ID, Uses: 1, TTLSeconds: 3600, SetEgress: true, Egress: []string{"127.0.0.1:4873"}})
	refused("an approval that sets egress", err)
	_, err = r.cl.Approve(asking.ID, 1, time.Hour)
	refused("an approval of a request asking for egress", err)
	for _, l := range []string{granted.ID, amended.ID} {
		if got := r.lease(l).UsesLeft; got != 1 {
			t.Fatalf("lease %s, with egress, has %d uses left, want 1", l, got)
		}
	}
	if got := pending(); got != before {
		t.Fatalf("%d requests pending, want the %d from before", got, before)
	}
	if len(r.exec.launched) != 0 {
		t.Fatalf("launched %d actions", len(r.exec.launched))
	}

	// Without a grant, everything works: approved, run, no network.
	_, err = r.cl.Approve(plain.ID, 1, time.Hour)
	must(t, err)
	r.wantAccepted(r.request("plain"))
	r.grant(asking.ID, 0) // --egress none: the lease is the command's without network
	_, err = r.cl.Submit(r.workspace, r.egressRequest("127.0.0.1:5000"))
	refused("the request asking for egress, granted none", err)
	r.wantAccepted(r.request("ci")) // asked without it, as the refusal says
	if len(r.exec.launched) != 2 || r.exec.launched[0].Egress != nil || r.exec.launched[1].Egress != nil {
		t.Fatalf("launched %d actions, want 2 without egress", len(r.exec.launched))
	}
}
