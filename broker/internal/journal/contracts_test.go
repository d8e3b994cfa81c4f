package journal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// A contract grant is consumed by Checkpoint as a lease is, one use per
// action and never refunded, with the action recorded under its own goal
// and fingerprint and keeping its parse; it is no exact lease, and the
// lease and approval listings leave it out.
func TestContractGrant(t *testing.T) {
	ctx := context.Background()
	j, g, id := opened(t)
	base := []byte("base-fingerprint-0123456789abcde")
	v, _, err := j.EnableContract(ctx, "go-test", "d1", base, id, 2, time.Hour, "", nil)
	must(t, err)
	if v.Contract != "go-test" || v.UsesLeft != 2 {
		t.Fatalf("enabled %+v", v)
	}
	if l, err := j.MatchLease(ctx, g, id.Workspace, base); err != nil || l != nil {
		t.Fatalf("MatchLease found the grant as an exact lease: %v %v", l, err)
	}
	if ls, err := j.Leases(ctx, "", 10, nil); err != nil || len(ls) != 0 {
		t.Fatalf("leases lists the grant: %+v %v", ls, err)
	}
	if as, _, err := j.Approvals(ctx, "", 10); err != nil || len(as) != 0 {
		t.Fatalf("approvals lists the grant's request: %+v %v", as, err)
	}
	if gs, err := j.ContractGrants(ctx, "", 10); err != nil || len(gs) != 1 || gs[0].ID != v.ID || gs[0].Contract != "go-test" {
		t.Fatalf("contract grants: %+v %v", gs, err)
	}
	if gs, err := j.LiveContractGrants(ctx, wire.DirIdentity{Dev: 9, Ino: 9, MntID: 9}); err != nil || len(gs) != 0 {
		t.Fatalf("another workspace's live grants: %+v %v", gs, err)
	}
	for want := uint32(1); ; want-- {
		live, err := j.LiveContractGrants(ctx, id.Workspace)
		must(t, err)
		if want == ^uint32(0) {
			if len(live) != 0 {
				t.Fatalf("a used-up grant is live: %+v", live)
			}
			break
		}
		if len(live) != 1 || string(live[0].Base) != string(base) || live[0].Digest != "d1" {
			t.Fatalf("live grants: %+v", live)
		}
		fp := []byte{byte(want)}
		l := UnderContract(&live[0], g, fp, []byte{0xa0})
		h, _, err := j.Checkpoint(ctx, l, "s"+string(rune('a'+want)), "", id, nil)
		must(t, err)
		if l.UsesLeft() != want || l.Contract() != "go-test" {
			t.Fatalf("after a use: %d left, contract %q", l.UsesLeft(), l.Contract())
		}
		rec, err := j.Record(ctx, h)
		must(t, err)
		if rec.LeaseID != v.ID || string(rec.Fingerprint) != string(fp) || string(rec.Parse) != "\xa0" || rec.Goal != g.ID {
			t.Fatalf("record %+v", rec)
		}
		if !sameRecord(l.Checkpointed(), rec) {
			t.Fatalf("the checkpoint's record %+v, read back %+v", l.Checkpointed(), rec)
		}
	}
	must(t, j.Revoke(ctx, v.ID))
	var we *wire.Error
	if err := j.Revoke(ctx, v.ID); !errors.As(err, &we) {
		t.Fatalf("revoking twice: %v", err)
	}
}

// A grant enabled for a pending request settles it in the same
// transaction: approved, covered by the grant, which its requester's
// Decision answers as its lease. A request that is no longer pending,
// or overdue, is refused and nothing is granted. RevokeContract ends
// only a contract grant: a plain lease is refused and stays usable.
func TestContractGrantSettlesRequest(t *testing.T) {
	ctx := context.Background()
	j, ids := requested(t, 3)
	base := []byte("base-fingerprint-0123456789abcde")
	v, err := j.Request(ctx, ids[0])
	must(t, err)
	grant, _, err := j.EnableContract(ctx, "go-test", "d1", base, &v.Identity, 5, time.Hour, ids[0], nil)
	must(t, err)
	d, err := j.Decision(ctx, ids[0])
	if err != nil || d.State != wire.RequestApproved || d.LeaseID != grant.ID {
		t.Fatalf("decision of the covered request: %+v %v; want approved on grant %s", d, err, grant.ID)
	}
	if _, _, err := j.EnableContract(ctx, "go-test", "d1", base, &v.Identity, 5, time.Hour, ids[0], nil); err == nil {
		t.Fatal("a second grant settled the approved request again")
	}
	if _, err := j.Approve(ctx, ids[0], 1, time.Hour, nil); err == nil {
		t.Fatal("approved the request its grant settled")
	}
	for name, q := range map[string]string{
		"cover a pending request": `INSERT INTO approval_covers VALUES ('` + ids[2] + `', '` + grant.ID + `', 0)`,
		"change a cover":          `UPDATE approval_covers SET lease_id = lease_id`,
		"remove a cover":          `DELETE FROM approval_covers`,
		"lease a covered request": `INSERT INTO leases SELECT 'l-x', '` + ids[0] + `', 'default', 1, 1, 2, 3, fingerprint, 0, 9, 1, 1, NULL, ''
			FROM approval_requests WHERE id = '` + ids[0] + `'`,
		"make a request expired": `INSERT INTO approval_requests (id, goal, goal_revision, session, fingerprint, identity, limitations,
			created_unix, state, expired_unix) SELECT 'ar-x', goal, goal_revision, session, fingerprint, identity, limitations, created_unix,
			'pending', created_unix FROM approval_requests WHERE id = '` + ids[2] + `'`,
	} {
		if _, err := j.db.ExecContext(ctx, q); err == nil {
			t.Errorf("the journal let SQL %s", name)
		}
	}
	start := time.Now()
	at(j, start, RequestTTL+time.Second)
	_, _, err = j.EnableContract(ctx, "go-test", "d1", base, &v.Identity, 5, time.Hour, ids[1], nil)
	if err == nil || !strings.Contains(err.Error(), "expired because no one decided it within 30m0s") {
		t.Fatalf("a grant for an overdue request: %v", err)
	}
	gs, err := j.ContractGrants(ctx, "", 10)
	must(t, err)
	if len(gs) != 1 {
		t.Fatalf("grants after the refusals: %+v; want only %s", gs, grant.ID)
	}

	at(j, start, 0)
	g, err := j.Goal(ctx, DefaultGoal)
	must(t, err)
	fresh, err := j.RequestApproval(ctx, g, "s", &v.Identity, []byte("fresh-fingerprint-0123456789abcd"), "limits", nil)
	must(t, err)
	lease, err := j.Approve(ctx, fresh.ID, 1, time.Hour, nil)
	must(t, err)
	if _, err := j.db.ExecContext(ctx, `INSERT INTO approval_covers VALUES (?, ?, 0)`, fresh.ID, grant.ID); err == nil {
		t.Error("the journal let SQL cover a request a lease was granted for")
	}
	var we *wire.Error
	if err := j.RevokeContract(ctx, lease.ID); !errors.As(err, &we) || !strings.Contains(we.Message, "is a lease, not a contract grant") {
		t.Fatalf("revoking a lease as a contract grant: %v", err)
	}
	if l, err := j.MatchLease(ctx, g, v.Identity.Workspace, []byte("fresh-fingerprint-0123456789abcd")); err != nil || l == nil || l.ID() != lease.ID {
		t.Fatalf("the lease after the refused revocation: %v %v; want it usable", l, err)
	}
	if err := j.RevokeContract(ctx, "l-none"); !errors.As(err, &we) {
		t.Fatalf("revoking an unknown grant: %v", err)
	}
	must(t, j.RevokeContract(ctx, grant.ID))
	if live, err := j.LiveContractGrants(ctx, v.Identity.Workspace); err != nil || len(live) != 0 {
		t.Fatalf("live grants after the revocation: %+v %v", live, err)
	}
}

// A grant enabled for a pending request settles, in the same
// transaction, every other pending request it admits (admits asks of
// each identity): all are approved, covered by it, and the grant says
// how many. Those it does not admit, and those no longer pending
// (denied, or past their TTL), are left as they are; admits is not
// asked about them.
func TestContractGrantSettlesEveryRequestItAdmits(t *testing.T) {
	ctx := context.Background()
	j, g, id := opened(t)
	start := time.Now()
	ask := asker(t, j, g, id)
	at(j, start, -RequestTTL)
	overdue := ask("e")
	at(j, start, 0)
	named, admitted, refused, denied := ask("a"), ask("b"), ask("c"), ask("d")
	must(t, j.Deny(ctx, denied, "no"))
	var asked []string
	grant, left, err := j.EnableContract(ctx, "go-test", "d1", []byte("base-fingerprint-0123456789abcde"), id, 5, time.Hour, named,
		func(e *wire.CommandIdentity) bool {
			asked = append(asked, e.Argv[0])
			return e.Argv[0] != "c"
		})
	must(t, err)
	if grant.Settled != 2 || left != 0 || strings.Join(asked, " ") != "b c" {
		t.Fatalf("the grant settled %d requests, asking about %q; want 2, asking about b and c", grant.Settled, asked)
	}
	for rid, want := range map[string]wire.RequestState{named: wire.RequestApproved, admitted: wire.RequestApproved,
		refused: wire.RequestPending, denied: wire.RequestDenied, overdue: wire.RequestExpired} {
		d, err := j.Decision(ctx, rid)
		must(t, err)
		if d.State != want || (want == wire.RequestApproved) != (d.LeaseID == grant.ID) {
			t.Errorf("request %s after the grant: %+v; want %s", rid, d, want)
		}
	}
}

// asker returns a function that asks approval for id with the one
// argument arg, under a fingerprint of its own, and returns the request.
func asker(t *testing.T, j *Journal, g Goal, id *wire.CommandIdentity) func(arg string) string {
	return func(arg string) string {
		t.Helper()
		e := *id
		e.Argv = []string{arg}
		ar, err := j.RequestApproval(context.Background(), g, "s", &e, []byte(strings.Repeat(arg, 32)), "limits", nil)
		must(t, err)
		return ar.ID
	}
}

// A grant settles at most as many requests as it has uses: the one it
// was enabled for, then the oldest others it admits. The rest stay
// pending (each would otherwise be told approved and, submitted again,
// find the grant used up), and the journal says how many.
func TestContractGrantSettlesAtMostItsUses(t *testing.T) {
	ctx := context.Background()
	j, g, id := opened(t)
	ask := asker(t, j, g, id)
	older := ask("o")
	named, next, last := ask("a"), ask("b"), ask("c")
	grant, left, err := j.EnableContract(ctx, "go-test", "d1", []byte("base-fingerprint-0123456789abcde"), id, 2, time.Hour, named,
		func(*wire.CommandIdentity) bool { return true })
	must(t, err)
	if grant.Settled != 2 || left != 2 {
		t.Fatalf("a grant of 2 uses settled %d requests and left %d pending; want 2 and 2", grant.Settled, left)
	}
	for rid, want := range map[string]wire.RequestState{named: wire.RequestApproved, older: wire.RequestApproved,
		next: wire.RequestPending, last: wire.RequestPending} {
		if v, err := j.Request(ctx, rid); err != nil || v.State != want {
			t.Errorf("request %s after the grant: %+v %v; want %s", rid, v, err, want)
		}
	}
}

// The grant's matching runs before its transaction, holding no lock: a
// request decided meanwhile (here, denied while admits is asked about
// it) is checked again in the transaction and left as it is.
func TestContractGrantSkipsARequestDecidedWhileMatching(t *testing.T) {
	ctx := context.Background()
	j, g, id := opened(t)
	ask := asker(t, j, g, id)
	named, denied, admitted := ask("a"), ask("b"), ask("c")
	grant, left, err := j.EnableContract(ctx, "go-test", "d1", []byte("base-fingerprint-0123456789abcde"), id, 5, time.Hour, named,
		func(e *wire.CommandIdentity) bool {
			if e.Argv[0] == "b" {
				short, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				if err := j.Deny(short, denied, "no"); err != nil {
					t.Errorf("deny while the grant matches: %v", err)
				}
			}
			return true
		})
	must(t, err)
	if grant.Settled != 2 || left != 0 {
		t.Fatalf("the grant settled %d and left %d pending; want 2 (%s and %s) and 0", grant.Settled, left, named, admitted)
	}
	for rid, want := range map[string]wire.RequestState{named: wire.RequestApproved, denied: wire.RequestDenied, admitted: wire.RequestApproved} {
		if v, err := j.Request(ctx, rid); err != nil || v.State != want {
			t.Errorf("request %s after the grant: %+v %v; want %s", rid, v, err, want)
		}
	}
}
