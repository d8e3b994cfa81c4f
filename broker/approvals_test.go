package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/broker/internal/journal"
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

// A pending request outlives the connection that asked for it, however
// long it stays away (many idle timeouts): the same command submitted on
// another connection finds the same request, and once the operator
// approved it, a new connection runs under its lease.
func TestPendingRequestOutlivesItsRequester(t *testing.T) {
	r := newRig(t, func(c *Config) { c.IdleTimeout = 50 * time.Millisecond })
	gone, v := r.requester(r.request("outlive"))
	id := v.ID
	gone.Close()
	time.Sleep(20 * 50 * time.Millisecond) // many idle timeouts, with no one connected for it
	if !r.pending(id) {
		t.Fatalf("request %s is %s once its requester went away, want pending", id, r.listed()[id].State)
	}
	other, again := r.requester(r.request("outlive"))
	other.Close()
	if again.ID != id {
		t.Fatalf("the same command on another connection raised %s, want the pending %s", again.ID, id)
	}
	l, err := r.cl.Approve(id, 1, time.Hour)
	must(t, err)
	next, err := client.Dial(r.state)
	must(t, err)
	defer next.Close()
	st, err := next.ApprovalWait(id, time.Minute)
	if err != nil || st.State != wire.RequestApproved || st.LeaseID != l.ID {
		t.Fatalf("approval_wait on a new connection: %+v %v; want approved on lease %s", st, err, l.ID)
	}
	s, err := next.Submit(r.workspace, r.request("outlive"))
	if err != nil || s.Handle == "" || s.Lease != l.ID {
		t.Fatalf("the same command on a new connection after the approval: %+v %v; want accepted on lease %s", s, err, l.ID)
	}
}

// A request still pending journal.RequestTTL after it was made expires
// and says why: approval_wait answers it expired, `approve` and `deny`
// are refused with that sentence, no lease exists for it, and the same
// command asks anew.
func TestRequestExpiresAtItsTTL(t *testing.T) {
	r := newRig(t)
	v := r.wantApproval(r.request("late"))
	r.clock.Advance(journal.RequestTTL - time.Second)
	if !r.pending(v.ID) {
		t.Fatalf("request %s is %s a second before its TTL, want pending", v.ID, r.listed()[v.ID].State)
	}
	r.clock.Advance(time.Second)
	st, err := r.cl.ApprovalWait(v.ID, time.Minute)
	if err != nil || st.State != wire.RequestExpired || st.Reason != "no one decided it within 30m0s" {
		t.Fatalf("approval_wait at the TTL: %+v %v; want expired, no one decided it within 30m0s", st, err)
	}
	_, err = r.cl.Approve(v.ID, 1, time.Hour)
	wantCode(t, err, wire.CodeArgumentsInvalid)
	if !strings.Contains(err.Error(), "expired because no one decided it within 30m0s") {
		t.Fatalf("approving the expired request: %v", err)
	}
	wantCode(t, r.cl.Deny(v.ID, "late"), wire.CodeArgumentsInvalid)
	l, err := r.cl.List(wire.ListLeases, false)
	must(t, err)
	if len(l.Leases) != 0 {
		t.Fatalf("a lease exists for the expired request: %+v", l.Leases)
	}
	if a := r.listed()[v.ID]; a.State != wire.RequestExpired || a.Reason != "no one decided it within 30m0s" {
		t.Fatalf("request %s is listed %s (%q)", a.ID, a.State, a.Reason)
	}
	if next := r.wantApproval(r.request("late")); next.ID == v.ID {
		t.Fatalf("the expired request %s was offered again", next.ID)
	}
}

// A wait on a request wakes when the request's TTL runs out, and answers
// it expired then, not pending once its own, longer budget ends: nothing
// else wakes it (no decision, no write), the clock only moves.
func TestApprovalWaitWakesAtTheTTL(t *testing.T) {
	r := newRig(t)
	v := r.wantApproval(r.request("late"))
	r.clock.Advance(journal.RequestTTL - time.Second) // the TTL runs out a second from now
	go func() {
		time.Sleep(100 * time.Millisecond)
		r.clock.Advance(time.Second)
	}()
	start := time.Now()
	m, err := r.b.ApprovalWait(context.Background(), v.ID, 20*time.Second) // in process: a client polls in slices of its own
	st, _ := m.(*wire.ApprovalState)
	if took := time.Since(start); err != nil || st == nil || st.State != wire.RequestExpired || took > 5*time.Second {
		t.Fatalf("approval_wait across the TTL: %+v %v after %s; want expired about a second in", m, err, took)
	}
}

// A call id whose request is past its TTL stands for a new request on its
// next repeat: nothing of the expired one is offered again.
func TestApprovalOverdueUnderCallID(t *testing.T) {
	r := newRig(t)
	s, err := r.cl.SubmitCall(r.workspace, r.request("c"), "call-1")
	must(t, err)
	r.clock.Advance(journal.RequestTTL)
	again, err := r.cl.SubmitCall(r.workspace, r.request("c"), "call-1")
	must(t, err)
	if again.Approval == nil || again.Approval.ID == s.Approval.ID {
		t.Fatalf("a repeat of the call after its request %s passed its TTL: %+v", s.Approval.ID, again)
	}
	if got := r.listed(); got[again.Approval.ID].State != wire.RequestPending || got[s.Approval.ID].State != wire.RequestExpired {
		t.Fatalf("want %s pending and %s expired, listed %+v", again.Approval.ID, s.Approval.ID, got)
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
