package journal

import (
	"context"
	"errors"
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
	v, err := j.EnableContract(ctx, "go-test", "d1", base, id, 2, time.Hour)
	must(t, err)
	if v.Contract != "go-test" || v.UsesLeft != 2 {
		t.Fatalf("enabled %+v", v)
	}
	if l, err := j.MatchLease(ctx, g, id.Workspace, base); err != nil || l != nil {
		t.Fatalf("MatchLease found the grant as an exact lease: %v %v", l, err)
	}
	if ls, err := j.Leases(ctx, "", 10); err != nil || len(ls) != 0 {
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
	}
	must(t, j.Revoke(ctx, v.ID))
	var we *wire.Error
	if err := j.Revoke(ctx, v.ID); !errors.As(err, &we) {
		t.Fatalf("revoking twice: %v", err)
	}
}
