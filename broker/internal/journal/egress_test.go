package journal

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"warrant/wire"
)

// fakeFP is a stand-in fingerprint of an identity: what the journal
// stores, it never computes.
func fakeFP(id *wire.CommandIdentity) []byte {
	blob, _ := wire.Canonical(id)
	return append([]byte("fp:"), blob...)
}

// setEgress is an Amend that sets the egress list.
func setEgress(list ...string) Amend {
	return func(id *wire.CommandIdentity) (*wire.CommandIdentity, []byte, error) {
		out := *id
		out.Egress = list
		return &out, fakeFP(&out), nil
	}
}

// TestApproveWithAnotherEgress: a lease granted with another egress list
// than its request's is bound to the amended fingerprint, keeps the list
// beside it (once, never changed) and is found by the request's
// fingerprint through AmendedLeases, while it is usable and only in its
// workspace and goal revision; MatchLease by the request's fingerprint
// never returns it. A lease whose list is the request's keeps none.
func TestApproveWithAnotherEgress(t *testing.T) {
	ctx := context.Background()
	j, g, id := opened(t)
	id.Egress = []string{"registry.npmjs.org:443"}
	fp := fakeFP(id)
	ar, err := j.RequestApproval(ctx, g, "s", id, fp, "limits", nil)
	must(t, err)
	lv, err := j.Approve(ctx, ar.ID, 2, time.Hour, setEgress("127.0.0.1:4873", "registry.npmjs.org:443"))
	must(t, err)
	granted := *id
	granted.Egress = []string{"127.0.0.1:4873", "registry.npmjs.org:443"}
	if !bytes.Equal(lv.Fingerprint, fakeFP(&granted)) {
		t.Fatal("the lease is not bound to the amended identity's fingerprint")
	}
	if l, err := j.MatchLease(ctx, g, id.Workspace, fp); err != nil || l != nil {
		t.Fatalf("MatchLease by the request's fingerprint: %v, %v", l, err)
	}
	found, err := j.AmendedLeases(ctx, g, id.Workspace, fp)
	must(t, err)
	if len(found) != 1 || found[0].Lease.ID() != lv.ID || !slices.Equal(found[0].Egress, granted.Egress) ||
		!bytes.Equal(found[0].Lease.Fingerprint(), lv.Fingerprint) {
		t.Fatalf("AmendedLeases: %+v", found)
	}
	for what, f := range map[string]func() ([]Amended, error){
		"another fingerprint": func() ([]Amended, error) { return j.AmendedLeases(ctx, g, id.Workspace, fakeFP(&granted)) },
		"another workspace": func() ([]Amended, error) {
			return j.AmendedLeases(ctx, g, wire.DirIdentity{Dev: 1, Ino: 9, MntID: 3}, fp)
		},
		"another revision": func() ([]Amended, error) {
			return j.AmendedLeases(ctx, Goal{ID: g.ID, Revision: g.Revision + 1}, id.Workspace, fp)
		},
	} {
		if got, err := f(); err != nil || len(got) != 0 {
			t.Errorf("%s: %+v, %v", what, got, err)
		}
	}
	if _, err := j.db.ExecContext(ctx, `UPDATE lease_egress SET egress = '' WHERE lease_id = ?`, lv.ID); err == nil {
		t.Error("a lease's egress was changed")
	}
	if _, err := j.db.ExecContext(ctx, `DELETE FROM lease_egress WHERE lease_id = ?`, lv.ID); err == nil {
		t.Error("a lease's egress was removed")
	}
	// Used up, it is no longer found.
	for range 2 {
		_, _, err := j.Checkpoint(ctx, found[0].Lease, "", "", &granted, nil)
		must(t, err)
		must(t, j.Finish(ctx, mustLastHandle(t, j), &wire.Result{Outcome: wire.KnownNotExecuted}))
	}
	if got, err := j.AmendedLeases(ctx, g, id.Workspace, fp); err != nil || len(got) != 0 {
		t.Fatalf("a used-up lease: %+v, %v", got, err)
	}

	// Granted none instead of the list: found, with no entries.
	ar, err = j.RequestApproval(ctx, g, "s", id, fp, "limits", nil)
	must(t, err)
	lv, err = j.Approve(ctx, ar.ID, 1, time.Hour, setEgress())
	must(t, err)
	if found, err = j.AmendedLeases(ctx, g, id.Workspace, fp); err != nil || len(found) != 1 || found[0].Lease.ID() != lv.ID || found[0].Egress != nil {
		t.Fatalf("a lease granting none: %+v, %v", found, err)
	}
	must(t, j.Revoke(ctx, lv.ID))
	if got, err := j.AmendedLeases(ctx, g, id.Workspace, fp); err != nil || len(got) != 0 {
		t.Fatalf("a revoked lease: %+v, %v", got, err)
	}

	// The list the request asked for, set again: an ordinary lease.
	ar, err = j.RequestApproval(ctx, g, "s", id, fp, "limits", nil)
	must(t, err)
	_, err = j.Approve(ctx, ar.ID, 1, time.Hour, setEgress(id.Egress...))
	must(t, err)
	if l, err := j.MatchLease(ctx, g, id.Workspace, fp); err != nil || l == nil {
		t.Fatalf("the asked list granted: MatchLease %v, %v", l, err)
	}
	var n int
	must(t, j.db.QueryRowContext(ctx, `SELECT count(*) FROM lease_egress`).Scan(&n))
	if n != 2 {
		t.Fatalf("%d leases keep an egress list, want 2", n)
	}
}

// mustLastHandle is the handle of the action checkpointed last.
func mustLastHandle(t *testing.T, j *Journal) string {
	t.Helper()
	var h string
	must(t, j.db.QueryRowContext(context.Background(), `SELECT handle FROM actions ORDER BY rowid DESC LIMIT 1`).Scan(&h))
	return h
}
