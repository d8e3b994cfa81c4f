package broker

import (
	"testing"

	"warrant/wire"
)

// TestLeaseNamesItsProfile: an agent may ask for any profile, and the
// lease granted for it names that profile, as granted and as listed, so
// that a `short` lease and a `standard` one for the same command are told
// apart.
func TestLeaseNamesItsProfile(t *testing.T) {
	r := newRig(t)
	req := r.request()
	req.Profile = wire.ProfileStandard
	_, l := r.approved(req, 1)
	if l.Profile != wire.ProfileStandard {
		t.Fatalf("the granted lease names profile %v, want standard", l.Profile)
	}
	_, short := r.approved(r.request(), 1)
	if short.Profile != wire.ProfileShort {
		t.Fatalf("the granted lease names profile %v, want short", short.Profile)
	}
	list, err := r.cl.List(wire.ListLeases, false)
	must(t, err)
	got := map[string]wire.Profile{}
	for _, v := range list.Leases {
		got[v.ID] = v.Profile
	}
	if got[l.ID] != wire.ProfileStandard || got[short.ID] != wire.ProfileShort {
		t.Fatalf("the listing names the profiles %v, want %s standard and %s short", got, l.ID, short.ID)
	}
}
