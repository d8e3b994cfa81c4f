package broker

import (
	"context"
	"strings"
	"testing"

	"warrant/wire"
)

// One agent session has at most one action in flight; the holdExecutor
// leaves each started action executing, so the second submit of the same
// session must be refused, and must not consume a use.
func TestSessionHasOneActionInFlight(t *testing.T) {
	r := newRig(t)
	req := r.request()
	req.Session = "agent-1"
	_, l := r.approved(req, 3)
	first := r.wantAccepted(req)

	_, err := r.cl.Submit(r.workspace, req)
	wantCode(t, err, wire.CodeBusy)
	if e, ok := err.(*wire.Error); !ok || !strings.Contains(e.Message, first) {
		t.Fatalf("the BUSY sentence does not name the action in flight: %v", err)
	}
	if left := r.lease(l.ID).UsesLeft; left != 2 {
		t.Fatalf("a BUSY refusal changed the lease's uses to %d, want 2", left)
	}

	// Another session, and no session at all, are not held up (the session
	// is routing, not identity: the same lease matches).
	other := req
	other.Session = "agent-2"
	r.wantAccepted(other)
	none := req
	none.Session = ""
	r.wantAccepted(none)
	if left := r.lease(l.ID).UsesLeft; left != 0 {
		t.Fatalf("uses left %d, want 0", left)
	}
}

// Once the first action is finished, the session may run again.
func TestSessionIdleAfterFinish(t *testing.T) {
	r := newRig(t)
	req := r.request()
	req.Session = "agent-1"
	r.approved(req, 2)
	first := r.wantAccepted(req)
	must(t, r.b.j.Finish(context.Background(), first, &wire.Result{Outcome: wire.KnownNotExecuted,
		Error: wire.Errorf(wire.CodeInternal, "finished by the test")}))
	r.wantAccepted(req)
}
