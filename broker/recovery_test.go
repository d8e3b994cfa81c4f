package broker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/wire"
)

// The journal's own refusals (a refunded use, a revived unknown action)
// and its durability settings are tested in broker/internal/journal.

func TestJournalRecoveryMarksInFlightUnknown(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, l := r.approved(r.request(), 3)
	h1 := r.wantAccepted(r.request())
	h2 := r.wantAccepted(r.request())
	h3 := r.wantAccepted(r.request())
	must(t, r.b.j.MarkRunning(ctx, h2))
	code := int32(0)
	must(t, r.b.j.Finish(ctx, h3, &wire.Result{Outcome: wire.Exited, ExitCode: &code, GroupGone: true}))
	got, err := r.b.j.RecoverInterrupted(ctx)
	must(t, err)
	if !slices.Equal(got, []string{h1, h2}) && !slices.Equal(got, []string{h2, h1}) {
		t.Fatalf("recovered %q, want %s and %s", got, h1, h2)
	}
	for h, want := range map[string]wire.ActionState{h1: wire.StateUnknown, h2: wire.StateUnknown, h3: wire.StateTerminal} {
		st, err := r.cl.Query(h)
		must(t, err)
		if st.State != want {
			t.Fatalf("%s is %s, want %s", h, st.State, want)
		}
	}
	if v := r.lease(l.ID); v.UsesLeft != 0 {
		t.Fatalf("recovery refunded uses: %+v", v)
	}
	must(t, r.cl.Resolve(h1, wire.ClassFailed, "checked by hand"))
	wantCode(t, r.cl.Resolve(h1, wire.ClassSuccess, ""), wire.CodeArgumentsInvalid)
	wantCode(t, r.cl.Resolve(h3, wire.ClassSuccess, ""), wire.CodeArgumentsInvalid)
	unk, err := r.cl.List(wire.ListActions, true)
	must(t, err)
	if len(unk.Actions) != 1 || unk.Actions[0].Handle != h2 {
		t.Fatalf("unclassified unknown actions %+v, want only %s", unk.Actions, h2)
	}
	if v, err := r.b.j.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Fatalf("integrity %q %v", v, err)
	}
}

func TestStateDirOneBrokerAndDurability(t *testing.T) {
	r := newRig(t)
	_, err := Open(context.Background(), Config{StateDir: r.state})
	if err == nil || !strings.Contains(err.Error(), "another broker") {
		t.Fatalf("a second broker opened the same state directory: %v", err)
	}
	for _, d := range []string{"", "keys", "run", "actions"} {
		fi, err := os.Stat(filepath.Join(r.state, d))
		must(t, err)
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s/%s has mode %v", r.state, d, fi.Mode().Perm())
		}
	}
}

// TestHandedLockStaysWithItsTaker: a broker opened with a lock taken by
// LockState holds the state directory while open, and Close leaves the
// lock to its taker, who releases it after whatever it made under it.
func TestHandedLockStaysWithItsTaker(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	lock, err := LockState(state)
	must(t, err)
	b, err := Open(context.Background(), Config{StateDir: state, Lock: lock})
	must(t, err)
	if _, err := LockState(state); err == nil || !strings.Contains(err.Error(), "another broker is using") {
		t.Fatalf("a second lock while the broker is open: %v", err)
	}
	must(t, b.Close())
	if _, err := LockState(state); err == nil || !strings.Contains(err.Error(), "another broker is using") {
		t.Fatalf("Close released a lock Open did not take: %v", err)
	}
	lock.Release()
	again, err := LockState(state)
	must(t, err)
	again.Release()
}
