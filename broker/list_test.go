package broker

import (
	"slices"
	"testing"

	"warrant/wire"
)

// A listing longer than the wire's page cap is read whole, page by page,
// through the operator socket: the first page says it is truncated, the
// cursor continues it exactly where it stopped, and the last page says it
// is not. Nothing is capped silently.
func TestListPagesPastTheCap(t *testing.T) {
	r := newRig(t)
	const n = wire.MaxList + 9
	_, l := r.approved(r.request(), n)
	var want []string
	for range n {
		want = append(want, r.wantAccepted(r.request()))
	}
	slices.Reverse(want) // actions list newest first

	var got []string
	q := wire.List{Kind: wire.ListActions}
	for pages := 0; ; pages++ {
		p, err := r.cl.ListPage(q)
		must(t, err)
		for _, a := range p.Actions {
			got = append(got, a.Handle)
		}
		if !p.Truncated {
			if pages != 1 {
				t.Fatalf("%d actions came in %d page(s), want 2", n, pages+1)
			}
			break
		}
		if len(p.Actions) != wire.MaxList {
			t.Fatalf("a truncated page of %d actions, want %d", len(p.Actions), wire.MaxList)
		}
		q.After = p.Actions[len(p.Actions)-1].Handle
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paging listed %d actions (%v…), want the %d submitted newest first", len(got), got[:3], n)
	}

	// A small page, and its continuation, of leases.
	_, l2 := r.approved(r.request("other"), 1)
	p, err := r.cl.ListPage(wire.List{Kind: wire.ListLeases, Limit: 1})
	must(t, err)
	if len(p.Leases) != 1 || p.Leases[0].ID != l2.ID || !p.Truncated {
		t.Fatalf("first page of one lease: %+v truncated %v, want %s and truncated", p.Leases, p.Truncated, l2.ID)
	}
	p, err = r.cl.ListPage(wire.List{Kind: wire.ListLeases, Limit: 1, After: l2.ID})
	must(t, err)
	if len(p.Leases) != 1 || p.Leases[0].ID != l.ID || p.Truncated {
		t.Fatalf("second page: %+v truncated %v, want %s and the end", p.Leases, p.Truncated, l.ID)
	}

	_, err = r.cl.ListPage(wire.List{Kind: wire.ListApprovals, After: "apr-nosuch"})
	wantCode(t, err, wire.CodeArgumentsInvalid)
}
