package broker

import (
	"strings"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// listed returns the approval requests the operator is shown, by id.
func (r *rig) listed() map[string]wire.ApprovalView {
	r.t.Helper()
	l, err := r.cl.List(wire.ListApprovals, false)
	must(r.t, err)
	ids := map[string]wire.ApprovalView{}
	for _, a := range l.Approvals {
		ids[a.ID] = a
	}
	return ids
}

// pending reports whether request id is listed as pending.
func (r *rig) pending(id string) bool { return r.listed()[id].State == wire.RequestPending }

// requester submits req on a connection of its own and returns the
// client and the approval request it raised.
func (r *rig) requester(req wire.ActionRequest) (*client.Client, *wire.ApprovalView) {
	r.t.Helper()
	cl, err := client.Dial(r.state)
	must(r.t, err)
	s, err := cl.Submit(r.workspace, req)
	must(r.t, err)
	if s.Approval == nil {
		r.t.Fatalf("accepted %s without approval", s.Handle)
	}
	return cl, s.Approval
}

// awaitEnded waits until request id is no longer pending. The broker
// learns of a disconnect asynchronously; the bound only stops a broken
// broker from hanging the test.
func (r *rig) awaitEnded(id string) {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); r.pending(id); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("request %s is still pending after its requester went away", id)
		}
	}
}

// A request whose requester disconnected while it was pending expires
// and says why; approving it is refused with that sentence.
func TestApprovalExpiresWhenRequesterGoesAway(t *testing.T) {
	r := newRig(t)
	requester, v := r.requester(r.request("gone"))
	id := v.ID
	if !r.pending(id) {
		t.Fatalf("request %s is not pending while its requester is connected", id)
	}
	requester.Close()
	r.awaitEnded(id)
	if v := r.listed()[id]; v.State != wire.RequestExpired || v.Reason != "its requester went away" {
		t.Fatalf("request %s is listed %s (%q), want expired because its requester went away", id, v.State, v.Reason)
	}
	_, err := r.cl.Approve(id, 1, time.Hour)
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

// A requester that stays connected keeps its request pending, however
// long it is idle: the idle timeout does not close a connection a
// pending request depends on.
func TestApprovalPendingWhileRequesterStays(t *testing.T) {
	r := newRig(t, func(c *Config) { c.IdleTimeout = 50 * time.Millisecond })
	requester, v := r.requester(r.request("stay"))
	defer requester.Close()
	id := v.ID
	// A second requester of the same request, which then leaves.
	if other, v2 := r.requester(r.request("stay")); v2.ID != id {
		t.Fatalf("the same submit on another connection raised %s, want request %s again", v2.ID, id)
	} else {
		other.Close()
	}
	time.Sleep(20 * 50 * time.Millisecond) // many idle timeouts
	if !r.pending(id) {
		t.Fatalf("request %s is %s while a requester is still connected", id, r.listed()[id].State)
	}
	l, err := r.cl.Approve(id, 1, time.Hour)
	must(t, err)
	st, err := requester.ApprovalWait(id, time.Minute)
	must(t, err)
	if st.State != wire.RequestApproved || st.LeaseID != l.ID {
		t.Fatalf("approval_wait after the approval: %+v, want lease %s", st, l.ID)
	}
	// Decided, the request no longer holds the connection open: it is idle
	// again and the broker closes it; the lease is unaffected.
	if s, err := requester.Submit(r.workspace, r.request("stay")); err != nil || s.Handle == "" {
		t.Fatalf("submit after the approval: %+v, %v; want accepted on lease %s", s, err, l.ID)
	}
}

// A denial that approval_wait answered has been reported to its
// requester: the next submit of the same action asks anew, at once.
func TestApprovalDenialReportedByWaitAsksAnew(t *testing.T) {
	r := newRig(t)
	v := r.wantApproval(r.request("x"))
	must(t, r.cl.Deny(v.ID, "not today"))
	st, err := r.cl.ApprovalWait(v.ID, time.Minute)
	must(t, err)
	if st.State != wire.RequestDenied || st.Reason != "not today" {
		t.Fatalf("approval_wait after the denial: %+v", st)
	}
	next := r.wantApproval(r.request("x"))
	if next.ID == v.ID {
		t.Fatal("the denied request was offered again")
	}
	if got := r.listed(); got[v.ID].State != wire.RequestDenied || got[next.ID].State != wire.RequestPending || len(got) != 2 {
		t.Fatalf("want %s denied and %s pending, listed %+v", v.ID, next.ID, got)
	}
}

// approval_wait notices a decision made while it waits.
func TestApprovalWaitNoticesDecision(t *testing.T) {
	r := newRig(t)
	requester, v := r.requester(r.request("w"))
	defer requester.Close()
	got := make(chan *wire.ApprovalState, 1)
	go func() {
		st, err := requester.ApprovalWait(v.ID, time.Hour)
		if err != nil {
			t.Error(err)
		}
		got <- st
	}()
	if st, err := r.cl.ApprovalWait(v.ID, 0); err != nil || st.State != wire.RequestPending {
		t.Fatalf("approval_wait with no budget: %+v, %v; want pending", st, err)
	}
	must(t, r.cl.Deny(v.ID, "no"))
	if st := <-got; st == nil || st.State != wire.RequestDenied || st.Reason != "no" {
		t.Fatalf("approval_wait across the denial: %+v", st)
	}
}

// An expired request is not offered again: the same submit asks anew.
func TestApprovalExpiredIsNotReused(t *testing.T) {
	r := newRig(t)
	requester, v := r.requester(r.request("e"))
	requester.Close()
	r.awaitEnded(v.ID)
	if next := r.wantApproval(r.request("e")); next.ID == v.ID {
		t.Fatalf("the expired request %s was offered again", next.ID)
	}
}

// A call id whose request expired stands for a new request on its next
// repeat: nothing of the expired one is offered again.
func TestApprovalExpiredUnderCallID(t *testing.T) {
	r := newRig(t)
	requester, err := client.Dial(r.state)
	must(t, err)
	s, err := requester.SubmitCall(r.workspace, r.request("c"), "call-1")
	must(t, err)
	requester.Close()
	r.awaitEnded(s.Approval.ID)
	again, err := r.cl.SubmitCall(r.workspace, r.request("c"), "call-1")
	must(t, err)
	if again.Approval == nil || again.Approval.ID == s.Approval.ID {
		t.Fatalf("a repeat of the call after its request %s expired: %+v", s.Approval.ID, again)
	}
	if !r.pending(again.Approval.ID) {
		t.Fatalf("the call's new request %s is not pending", again.Approval.ID)
	}
}
