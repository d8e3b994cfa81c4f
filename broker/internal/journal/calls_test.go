package journal

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// callRig is a journal on a file, one identity and its fingerprint.
type callRig struct {
	t    *testing.T
	path string
	j    *Journal
	g    Goal
	id   *wire.CommandIdentity
	fp   []byte
}

func newCallRig(t *testing.T) *callRig {
	r := &callRig{t: t, path: filepath.Join(t.TempDir(), "journal.db"),
		id: &wire.CommandIdentity{Executable: wire.Executable{Requested: "true"}, Argv: []string{"x"},
			Workspace: wire.DirIdentity{Path: "/ws", Dev: 1, Ino: 2, MntID: 3}, Profile: wire.ProfileShort},
		fp: []byte("0123456789abcdef0123456789abcdef")}
	r.open()
	t.Cleanup(func() { r.j.Close() })
	return r
}

// open (re)opens the journal on its file, as a restarted broker does.
func (r *callRig) open() {
	var err error
	r.j, err = Open(context.Background(), r.path, time.Now)
	must(r.t, err)
	r.g, err = r.j.Goal(context.Background(), DefaultGoal)
	must(r.t, err)
}

// count counts the rows of a table.
func (r *callRig) count(table string) int {
	var n int
	must(r.t, r.j.db.QueryRow(`SELECT COUNT(*) FROM `+table).Scan(&n))
	return n
}

// usesLeft is the uses left of every lease, summed.
func (r *callRig) usesLeft() int {
	var n int
	must(r.t, r.j.db.QueryRow(`SELECT COALESCE(SUM(uses_left), 0) FROM leases`).Scan(&n))
	return n
}

// leased raises the approval request of call, approves it with uses and
// returns its lease.
func (r *callRig) leased(call *Call, uses uint32) (*Lease, *wire.ApprovalView) {
	ctx := context.Background()
	ar, err := r.j.RequestApproval(ctx, r.g, "s", r.id, r.fp, "limits", call)
	must(r.t, err)
	_, err = r.j.Approve(ctx, ar.ID, uses, time.Hour, nil)
	must(r.t, err)
	l, err := r.j.MatchLease(ctx, r.g, r.id.Workspace, r.fp)
	must(r.t, err)
	return l, ar
}

// TestCallBindsItsApprovalThenItsAction: a call id is bound to the
// approval request it raised (asking again reuses it), then to the action
// its approved retry started; a further checkpoint of the same call is
// ErrCallStarted and consumes nothing, even with uses left.
func TestCallBindsItsApprovalThenItsAction(t *testing.T) {
	r := newCallRig(t)
	ctx := context.Background()
	call := &Call{Session: "s", ID: "c-1", Request: []byte("request A")}
	if b, err := r.j.Call(ctx, call); err != nil || b != nil {
		t.Fatalf("an unused call id: %+v, %v", b, err)
	}
	ar, err := r.j.RequestApproval(ctx, r.g, "s", r.id, r.fp, "limits", call)
	must(t, err)
	again, err := r.j.RequestApproval(ctx, r.g, "s", r.id, r.fp, "limits", call)
	must(t, err)
	b, err := r.j.Call(ctx, call)
	must(t, err)
	if again.ID != ar.ID || b == nil || b.Handle != "" || b.Pending == nil || b.Pending.ID != ar.ID {
		t.Fatalf("the call must stand for its one pending request %s: %+v (asked again: %s)", ar.ID, b, again.ID)
	}
	if n := r.count("approval_requests"); n != 1 {
		t.Fatalf("%d approval requests for one call", n)
	}
	_, err = r.j.Approve(ctx, ar.ID, 3, time.Hour, nil)
	must(t, err)
	if b, _ := r.j.Call(ctx, call); b == nil || b.Handle != "" || b.Pending != nil || b.Denial != nil {
		t.Fatalf("after approval: %+v", b)
	}
	l, err := r.j.MatchLease(ctx, r.g, r.id.Workspace, r.fp)
	must(t, err)
	h, _, err := r.j.Checkpoint(ctx, l, "s", "", r.id, call)
	must(t, err)
	if b, _ := r.j.Call(ctx, call); b == nil || b.Handle != h {
		t.Fatalf("the call must name its action %s: %+v", h, b)
	}
	must(t, r.j.Finish(ctx, h, &wire.Result{Outcome: wire.Exited}))
	if _, _, err := r.j.Checkpoint(ctx, l, "s", "", r.id, call); !errors.Is(err, ErrCallStarted) {
		t.Fatalf("a second checkpoint of the call: %v, want ErrCallStarted", err)
	}
	if _, err := r.j.RequestApproval(ctx, r.g, "s", r.id, []byte("another fingerprint, 32 bytes..."), "limits", call); !errors.Is(err, ErrCallStarted) {
		t.Fatalf("an approval request for a call that started an action: %v, want ErrCallStarted", err)
	}
	if n, left := r.count("actions"), r.usesLeft(); n != 1 || left != 2 {
		t.Fatalf("%d actions and %d uses left; the repeat must record and consume nothing (want 1 and 2)", n, left)
	}
}

// TestCallIsOneRequestPerSession: the same call id with another request
// in the same session is ARGUMENTS_INVALID naming the call id, and
// records nothing; in another session (or without one) it is unused.
func TestCallIsOneRequestPerSession(t *testing.T) {
	r := newCallRig(t)
	ctx := context.Background()
	call := &Call{Session: "s", ID: "c-1", Request: []byte("request A")}
	_, err := r.j.RequestApproval(ctx, r.g, "s", r.id, r.fp, "limits", call)
	must(t, err)
	other := &Call{Session: "s", ID: "c-1", Request: []byte("request B")}
	for name, f := range map[string]func() error{
		"read": func() error { _, err := r.j.Call(ctx, other); return err },
		"ask": func() error {
			_, err := r.j.RequestApproval(ctx, r.g, "s", r.id, []byte("another fingerprint, 32 bytes..."), "limits", other)
			return err
		},
	} {
		err := f()
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeArgumentsInvalid || !strings.Contains(we.Message, `call_id "c-1"`) ||
			!strings.Contains(we.Message, "another request") {
			t.Fatalf("%s: the same call id with another request: %v", name, err)
		}
	}
	if n := r.count("approval_requests"); n != 1 {
		t.Fatalf("the refused call recorded an approval request: %d", n)
	}
	for _, s := range []string{"t", ""} {
		if b, err := r.j.Call(ctx, &Call{Session: s, ID: "c-1", Request: []byte("request B")}); err != nil || b != nil {
			t.Fatalf("session %q: the call id of session s must be unused here: %+v, %v", s, b, err)
		}
	}
}

// TestCallSurvivesARestart: a call checkpointed before the broker died
// still names its action after the journal is reopened and recovery made
// the action unknown; the call's row cannot be edited or deleted.
func TestCallSurvivesARestart(t *testing.T) {
	r := newCallRig(t)
	ctx := context.Background()
	call := &Call{Session: "s", ID: "c-1", Request: []byte("request A")}
	l, _ := r.leased(call, 2)
	h, _, err := r.j.Checkpoint(ctx, l, "s", "", r.id, call)
	must(t, err)
	must(t, r.j.Close())

	r.open()
	if _, err := r.j.RecoverInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := r.j.Call(ctx, call)
	must(t, err)
	if b == nil || b.Handle != h {
		t.Fatalf("after the restart the call must name %s: %+v", h, b)
	}
	if st, err := r.j.Status(ctx, h); err != nil || st.State != wire.StateUnknown {
		t.Fatalf("its action: %+v, %v", st, err)
	}
	if _, _, err := r.j.Checkpoint(ctx, l, "s", "", r.id, call); !errors.Is(err, ErrCallStarted) {
		t.Fatalf("a checkpoint of the call after the restart: %v, want ErrCallStarted", err)
	}
	if left := r.usesLeft(); left != 1 {
		t.Fatalf("%d uses left, want 1", left)
	}
	for name, q := range map[string]string{
		"rebind the action":  `UPDATE submit_calls SET handle = NULL`,
		"change the request": `UPDATE submit_calls SET request = x'00'`,
		"forget the call":    `DELETE FROM submit_calls`,
	} {
		if _, err := r.j.db.ExecContext(ctx, q); err == nil {
			t.Errorf("the journal let SQL %s", name)
		}
	}
}

// TestCallOfARefusedCheckpointStaysUnbound: a checkpoint that fails (the
// lease has no use left) rolls back the call's binding with it, so the
// call still stands for its (approved) approval request only.
func TestCallOfARefusedCheckpointStaysUnbound(t *testing.T) {
	r := newCallRig(t)
	ctx := context.Background()
	first := &Call{Session: "s", ID: "c-1", Request: []byte("request A")}
	l, _ := r.leased(first, 1)
	_, _, err := r.j.Checkpoint(ctx, l, "", "", r.id, nil) // another submit spends the one use
	must(t, err)
	if _, _, err := r.j.Checkpoint(ctx, l, "s", "", r.id, first); err == nil {
		t.Fatal("a checkpoint on a spent lease passed")
	}
	b, err := r.j.Call(ctx, first)
	must(t, err)
	if b == nil || b.Handle != "" || b.Pending != nil || b.Denial != nil {
		t.Fatalf("the refused checkpoint bound the call: %+v", b)
	}
}
