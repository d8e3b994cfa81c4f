package broker

import (
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// launches is how many launches the rig's executor was handed.
func (r *rig) launches() int {
	r.exec.mu.Lock()
	defer r.exec.mu.Unlock()
	return len(r.exec.launched)
}

func (r *rig) submitCall(req wire.ActionRequest, call string) client.Submitted {
	r.t.Helper()
	s, err := r.cl.SubmitCall(r.workspace, req, call)
	must(r.t, err)
	return s
}

// TestCallIDStartsOneAction: a call id's repeats answer its one pending
// approval request (even after the executable changed, which would
// otherwise raise a new one), a new one once its approval no longer
// matches, then, once approved, the one action it
// started with its state now — not BUSY, and nothing launched or consumed
// again; another request under the call id is ARGUMENTS_INVALID naming
// it; another session is another namespace.
func TestCallIDStartsOneAction(t *testing.T) {
	r := newRig(t)
	req := r.request("a")
	req.Session = "agent-1"
	first := r.submitCall(req, "c-1")
	if first.Approval == nil {
		t.Fatalf("want an approval request, got %+v", first)
	}
	copyFile(t, "/bin/false", r.tool) // another digest: another fingerprint
	if again := r.submitCall(req, "c-1"); again.Approval == nil || again.Approval.ID != first.Approval.ID {
		t.Fatalf("a repeat while pending must answer request %s: %+v", first.Approval.ID, again)
	}
	if l, err := r.cl.List(wire.ListApprovals, false); err != nil || len(l.Approvals) != 1 {
		t.Fatalf("want exactly one approval request: %+v, %v", l, err)
	}
	// Its lease binds the old digest: the call raises a request for what
	// the executable is now, and its repeats answer that one.
	_, err := r.cl.Approve(first.Approval.ID, 1, time.Hour)
	must(t, err)
	second := r.submitCall(req, "c-1")
	if second.Approval == nil || second.Approval.ID == first.Approval.ID {
		t.Fatalf("the changed executable needs its own approval: %+v", second)
	}
	if again := r.submitCall(req, "c-1"); again.Approval == nil || again.Approval.ID != second.Approval.ID {
		t.Fatalf("a repeat while pending must answer request %s: %+v", second.Approval.ID, again)
	}
	l, err := r.cl.Approve(second.Approval.ID, 3, time.Hour)
	must(t, err)
	h := r.submitCall(req, "c-1")
	if h.Handle == "" || h.Repeat != nil {
		t.Fatalf("the approved call must start its action: %+v", h)
	}
	for range 2 {
		s := r.submitCall(req, "c-1")
		if s.Handle != h.Handle || s.Repeat == nil || s.Repeat.State != wire.StateAccepted {
			t.Fatalf("a repeat must answer action %s in its state now: %+v", h.Handle, s)
		}
	}
	if n, left := r.launches(), r.lease(l.ID).UsesLeft; n != 1 || left != 2 {
		t.Fatalf("%d launches and %d uses left, want 1 and 2", n, left)
	}

	other := req
	other.Argv = []string{"b"}
	_, err = r.cl.SubmitCall(r.workspace, other, "c-1")
	wantCode(t, err, wire.CodeArgumentsInvalid)
	if msg := err.Error(); !strings.Contains(msg, `call_id "c-1"`) || !strings.Contains(msg, "another request") {
		t.Fatalf("the refusal must name the call id and say it was used for another request: %s", msg)
	}

	elsewhere := req
	elsewhere.Session = "agent-2"
	if s := r.submitCall(elsewhere, "c-1"); s.Handle == "" || s.Handle == h.Handle || s.Repeat != nil {
		t.Fatalf("in another session the call id is unused: %+v", s)
	}
	if n, left := r.launches(), r.lease(l.ID).UsesLeft; n != 2 || left != 1 {
		t.Fatalf("%d launches and %d uses left, want 2 and 1", n, left)
	}
}

// TestCallIDConcurrentRepeatsStartOne: many connections submitting the
// same call at once start one action, and every one is told its handle.
func TestCallIDConcurrentRepeatsStartOne(t *testing.T) {
	r := newRig(t)
	req := r.request()
	req.Session = "agent-1"
	_, l := r.approved(req, 10)
	const n = 8
	handles := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		cl, err := client.Dial(r.state)
		must(t, err)
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := cl.SubmitCall(r.workspace, req, "c-1")
			if err != nil {
				t.Errorf("submit %d: %v", i, err)
			}
			handles[i] = s.Handle
		}()
	}
	wg.Wait()
	for i, h := range handles {
		if h == "" || h != handles[0] {
			t.Fatalf("submit %d answered %q, submit 0 %q: want one handle", i, h, handles[0])
		}
	}
	if got, left := r.launches(), r.lease(l.ID).UsesLeft; got != 1 || left != 9 {
		t.Fatalf("%d launches and %d uses left, want 1 and 9", got, left)
	}
}

// TestCallIDDeniedStaysDenied: once its approval request was denied, the
// call id answers APPROVAL_DENIED every time and runs nothing; a new call
// id asks anew.
func TestCallIDDeniedStaysDenied(t *testing.T) {
	r := newRig(t)
	req := r.request()
	s := r.submitCall(req, "c-1")
	must(t, r.cl.Deny(s.Approval.ID, "not today"))
	for range 2 {
		_, err := r.cl.SubmitCall(r.workspace, req, "c-1")
		wantCode(t, err, wire.CodeApprovalDenied)
		if !strings.Contains(err.Error(), "not today") || !strings.Contains(err.Error(), s.Approval.ID) {
			t.Fatalf("the denial must name the request and the reason: %v", err)
		}
	}
	if fresh := r.submitCall(req, "c-2"); fresh.Approval == nil || fresh.Approval.ID == s.Approval.ID {
		t.Fatalf("a new call id must ask anew: %+v", fresh)
	}
	if n := r.launches(); n != 0 {
		t.Fatalf("%d launches", n)
	}
}

// TestSubmitAnsweredOnceTheCheckpointIsDurable: a checkpoint whose fsync
// fails is never accepted. Its submit is refused IO_FAILED and the
// executor's Durable says why (the lifecycle then sends no Proceed); a
// repeat of its call id is refused the same way instead of being answered
// the action's status; and so is every submit after it, whose record the
// failed log cannot be trusted to hold.
func TestSubmitAnsweredOnceTheCheckpointIsDurable(t *testing.T) {
	r := newRig(t)
	req := r.request("a")
	req.Session = "agent-1"
	r.approved(req, 3)
	r.b.j.SetFsync(func(int) error { return syscall.EIO })
	_, err := r.cl.SubmitCall(r.workspace, req, "c-1")
	wantCode(t, err, wire.CodeIOFailed)
	if !strings.Contains(err.Error(), "could not be made durable, so it was not run") {
		t.Fatalf("the refusal %q", err)
	}
	r.exec.mu.Lock()
	got := r.exec.durable
	r.exec.mu.Unlock()
	if len(got) != 1 || !errors.Is(got[0], syscall.EIO) {
		t.Fatalf("the executor's Durable said %v", got)
	}
	_, err = r.cl.SubmitCall(r.workspace, req, "c-1")
	wantCode(t, err, wire.CodeIOFailed)
	r.b.j.SetFsync(syscall.Fsync)
	req.Session = "agent-2"
	_, err = r.cl.Submit(r.workspace, req)
	wantCode(t, err, wire.CodeIOFailed)
}
