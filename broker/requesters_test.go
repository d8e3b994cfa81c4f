package broker

import (
	"strings"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// pendingIDs lists the ids of the requests still pending.
func (r *rig) pendingIDs() map[string]bool {
	r.t.Helper()
	l, err := r.cl.List(wire.ListApprovals, false)
	must(r.t, err)
	ids := map[string]bool{}
	for _, a := range l.Approvals {
		ids[a.ID] = true
	}
	return ids
}

// A request whose requester disconnected while it was pending expires
// and says why; approving it is refused with that sentence.
func TestApprovalExpiresWhenRequesterGoesAway(t *testing.T) {
	r := newRig(t)
	requester, err := client.Dial(r.state)
	must(t, err)
	s, err := requester.Submit(r.workspace, r.request("gone"))
	must(t, err)
	if s.Approval == nil {
		t.Fatalf("accepted %s without approval", s.Handle)
	}
	id := s.Approval.ID
	if !r.pendingIDs()[id] {
		t.Fatalf("request %s is not pending while its requester is connected", id)
	}
	requester.Close()
	// The broker learns of the disconnect asynchronously; the bound only
	// stops a broken broker from hanging the test.
	for deadline := time.Now().Add(10 * time.Second); r.pendingIDs()[id]; {
		if time.Now().After(deadline) {
			t.Fatalf("request %s is still pending after its requester went away", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err = r.cl.Approve(id, 1, time.Hour)
	wantCode(t, err, wire.CodeArgumentsInvalid)
	if !strings.Contains(err.Error(), "expired because its requester went away") {
		t.Fatalf("approving the expired request: %v", err)
	}
	l, err := r.cl.List(wire.ListLeases, false)
	must(t, err)
	if len(l.Leases) != 0 {
		t.Fatalf("a lease exists for the expired request: %+v", l.Leases)
	}
}
