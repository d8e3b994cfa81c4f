package broker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/wire"
)

// withPresets writes <state>/egress before the broker opens.
func withPresets(text string) func(*Config) {
	return func(cfg *Config) {
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			panic(err)
		}
		if err := os.WriteFile(filepath.Join(cfg.StateDir, "egress"), []byte(text), 0o600); err != nil {
			panic(err)
		}
	}
}

// egressRequest is the rig's request asking for egress.
func (r *rig) egressRequest(egress ...string) wire.ActionRequest {
	req := r.request("ci")
	req.Egress = egress
	return req
}

// grant approves request id for one use, with egress set to list.
func (r *rig) grant(id string, b wire.Binding, list ...string) *wire.LeaseView {
	r.t.Helper()
	l, err := r.cl.Grant(context.Background(), &wire.Approve{RequestID: id, Uses: 1, TTLSeconds: 3600, Binding: b, SetEgress: true, Egress: list})
	must(r.t, err)
	return l
}

// launched is the identity the executor was handed last.
func (r *rig) launched() *wire.CommandIdentity {
	r.exec.mu.Lock()
	defer r.exec.mu.Unlock()
	return r.exec.launched[len(r.exec.launched)-1]
}

// TestEgressAsked: what a request asks for — entries and the operator's
// presets — is the exact list on its approval request, a different
// request from the same command without egress; an unknown preset is
// ARGUMENTS_INVALID and asks nothing.
func TestEgressAsked(t *testing.T) {
	r := newRig(t, withPresets("npm = registry.npmjs.org:443\n"))
	plain := r.wantApproval(r.request("ci"))
	v := r.wantApproval(r.egressRequest("npm", "127.0.0.1:4873"))
	if want := []string{"127.0.0.1:4873", "registry.npmjs.org:443"}; !slices.Equal(v.Identity.Egress, want) {
		t.Fatalf("the request binds egress %q, want %q", v.Identity.Egress, want)
	}
	if v.ID == plain.ID || bytes.Equal(v.Fingerprint, plain.Fingerprint) || plain.Identity.Egress != nil {
		t.Fatal("the command with egress is the same request as without")
	}
	if !strings.Contains(v.Limitations, "Network: only TCP connections to the 2 host:port entries of its egress grant") ||
		strings.Contains(v.Limitations, "No network") {
		t.Fatalf("the limitations do not say the network it gets:\n%s", v.Limitations)
	}
	_, err := r.cl.Submit(r.workspace, r.egressRequest("npmm"))
	wantCode(t, err, wire.CodeArgumentsInvalid)
	if !strings.Contains(err.Error(), `"npmm"`) || !strings.Contains(err.Error(), "presets: npm") {
		t.Fatalf("an unknown preset: %v", err)
	}
}

// TestEgressAmendedByTheOperator: `broker approve --egress` grants
// another list than the request asked for; the waiting request's
// resubmit (its identity still asking the first list) runs under that
// lease with the granted list, and with the binding pinned too; a submit
// asking yet another list, or none, is not covered and asks anew.
func TestEgressAmendedByTheOperator(t *testing.T) {
	r := newRig(t, withPresets("npm = registry.npmjs.org:443\n"))
	asked := r.egressRequest("npm", "127.0.0.1:4873")
	v := r.wantApproval(asked)
	l := r.grant(v.ID, 0, "registry.npmjs.org:443")
	if bytes.Equal(l.Fingerprint, v.Fingerprint) {
		t.Fatal("the lease is for the identity the request asked for")
	}
	for _, other := range []wire.ActionRequest{r.egressRequest("127.0.0.1:4873"), r.request("ci")} {
		if s := r.submit(other); s.Approval == nil || s.Approval.ID == v.ID {
			t.Fatalf("a submit asking egress %q is covered by the lease granted for %q", other.Egress, asked.Egress)
		}
	}
	s := r.submit(asked)
	if s.Handle == "" || s.Lease != l.ID {
		t.Fatalf("the resubmit of the approved request: %+v, want lease %s", s, l.ID)
	}
	if got := r.launched().Egress; !slices.Equal(got, []string{"registry.npmjs.org:443"}) {
		t.Fatalf("the action runs with egress %q, want the granted list", got)
	}
	if s := r.submit(asked); s.Approval == nil {
		t.Fatal("the used-up lease covered another run")
	}

	// Granted none, and a sealed copy: the resubmit runs with no network.
	v = r.wantApproval(asked)
	l = r.grant(v.ID, wire.SealedSnapshot)
	s = r.submit(asked)
	if s.Handle == "" || s.Lease != l.ID {
		t.Fatalf("the resubmit after --egress none --binding sealed-snapshot: %+v, want lease %s", s, l.ID)
	}
	if id := r.launched(); id.Egress != nil || id.Binding != wire.SealedSnapshot {
		t.Fatalf("the action runs with egress %q, binding %s; want none, sealed", id.Egress, id.Binding)
	}
}

// TestEgressNeverUnderAContract: a contract grant carries no network:
// a command with egress that its grammar accepts still asks for an
// exact approval, is offered no contract, and cannot settle one.
func TestEgressNeverUnderAContract(t *testing.T) {
	r := newRig(t)
	first := r.wantApproval(r.gitRequest("status"))
	if _, err := r.enable("git", first.ID, ""); err != nil {
		t.Fatal(err)
	}
	r.wantAccepted(r.gitRequest("status"))
	req := r.gitRequest("status")
	req.Egress = []string{"127.0.0.1:4873"}
	v := r.wantApproval(req)
	if names := r.offered(v); len(names) != 0 {
		t.Fatalf("offered %q for a request with egress", names)
	}
	r.refusedEnable("git", v.ID, "", "asks for network access", "broker approve "+v.ID)
}
