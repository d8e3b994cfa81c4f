package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// A workspace holding a hard link to a file outside it is refused with
// WORKSPACE_ALIASED before anything is asked or consumed: no approval
// request is made, a matching lease keeps its uses, no action is recorded
// or launched. Once the link is gone the same lease runs it, and the
// card's limitations say how many files the scan checked.
func TestSubmitRefusesAliasedWorkspace(t *testing.T) {
	r := newRig(t)
	outside := filepath.Join(filepath.Dir(r.workspace), "outside")
	must(t, os.WriteFile(outside, []byte("x"), 0o644))
	planted := filepath.Join(r.workspace, "sub", "planted")

	must(t, os.Link(outside, planted))
	_, err := r.cl.Submit(r.workspace, r.request())
	wantCode(t, err, wire.CodeWorkspaceAliased)
	if !strings.Contains(err.Error(), `"sub/planted"`) {
		t.Fatalf("the refusal does not name the planted link: %v", err)
	}
	l, err := r.cl.List(wire.ListApprovals, false)
	must(t, err)
	if len(l.Approvals) != 0 {
		t.Fatalf("an aliased workspace raised approval requests %+v", l.Approvals)
	}

	must(t, os.Remove(planted))
	v, lease := r.approved(r.request(), 3)
	if !strings.Contains(v.Limitations, "The workspace was checked for hard links to files outside it (0 files)") ||
		!strings.Contains(v.Limitations, "a process outside the sandbox could still plant one during the run") {
		t.Fatalf("the card does not state the alias scan: %q", v.Limitations)
	}
	must(t, os.Link(outside, planted))
	_, err = r.cl.Submit(r.workspace, r.request())
	wantCode(t, err, wire.CodeWorkspaceAliased)
	if got := r.lease(lease.ID).UsesLeft; got != 3 {
		t.Fatalf("the refusal consumed a use: %d left, want 3", got)
	}
	acts, err := r.cl.List(wire.ListActions, false)
	must(t, err)
	if len(acts.Actions) != 0 || len(r.exec.launched) != 0 {
		t.Fatalf("%d actions recorded and %d launched for an aliased workspace", len(acts.Actions), len(r.exec.launched))
	}

	must(t, os.Remove(planted))
	r.wantAccepted(r.request())
	if got := r.lease(lease.ID).UsesLeft; got != 2 {
		t.Fatalf("uses left %d, want 2", got)
	}
}
