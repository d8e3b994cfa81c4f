package journal

import (
	"context"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// requested opens a journal with n pending requests, each for its own
// fingerprint.
func requested(t *testing.T, n int) (*Journal, []string) {
	t.Helper()
	ctx := context.Background()
	j, g, id := opened(t)
	var ids []string
	for i := range n {
		fp := []byte(strings.Repeat(string(rune('a'+i)), 32))
		ar, err := j.RequestApproval(ctx, g, "s", id, fp, "limits", nil)
		must(t, err)
		ids = append(ids, ar.ID)
	}
	return j, ids
}

// An expired request is final: it cannot be approved or denied, by the
// journal's code or by SQL, and its expiry is never changed.
func TestExpiredRequestIsFinal(t *testing.T) {
	j, ids := requested(t, 3)
	ctx := context.Background()
	if ok, err := j.Expire(ctx, ids[0], "its requester went away"); err != nil || !ok {
		t.Fatalf("expire a pending request: %v, %v", ok, err)
	}
	if ok, err := j.Expire(ctx, ids[0], "again"); err != nil || ok {
		t.Fatalf("expire it again: %v, %v; want no change", ok, err)
	}
	_, err := j.Approve(ctx, ids[0], 1, time.Hour, nil)
	if err == nil || !strings.Contains(err.Error(), "expired because its requester went away") {
		t.Fatalf("approve the expired request: %v", err)
	}
	if err := j.Deny(ctx, ids[0], "x"); err == nil {
		t.Fatal("denied an expired request")
	}
	must(t, j.Deny(ctx, ids[1], "no"))
	if ok, err := j.Expire(ctx, ids[1], "its requester went away"); err != nil || ok {
		t.Fatalf("expire a denied request: %v, %v; want no change", ok, err)
	}
	for name, q := range map[string]string{
		"decide an expired request": `UPDATE approval_requests SET state = 'approved' WHERE id = '` + ids[0] + `'`,
		"edit an expiry":            `UPDATE approval_expiries SET reason = 'x'`,
		"remove an expiry":          `DELETE FROM approval_expiries`,
		"expire a decided request":  `INSERT INTO approval_expiries VALUES ('` + ids[1] + `', 'x', 0)`,
		"lease an expired request":  `INSERT INTO leases SELECT 'l-x', '` + ids[0] + `', 'default', 1, 1, 2, 3, fingerprint, 0, 9, 1, 1, NULL, '' FROM approval_requests WHERE id = '` + ids[0] + `'`,
		"expire without saying why": `INSERT INTO approval_expiries VALUES ('` + ids[2] + `', '', 0)`,
		"expire an unknown request": `INSERT INTO approval_expiries VALUES ('ar-none', 'x', 0)`,
	} {
		if _, err := j.db.ExecContext(ctx, q); err == nil {
			t.Errorf("the journal let SQL %s", name)
		}
	}
	d, err := j.Decision(ctx, ids[0])
	if err != nil || d.State != wire.RequestExpired || d.Reason != "its requester went away" {
		t.Fatalf("decision of the expired request: %+v %v", d, err)
	}
	got, err := j.ExpirePending(ctx, "the broker stopped while it was pending")
	if err != nil || len(got) != 1 || got[0] != ids[2] {
		t.Fatalf("expire the pending ones: %v, %v; want only %s", got, err, ids[2])
	}
	l, truncated, err := j.Approvals(ctx, "", 10)
	must(t, err)
	if truncated {
		t.Fatal("three requests listed as a truncated page of ten")
	}
	states := map[string]wire.RequestState{}
	for _, v := range l {
		states[v.ID] = v.State
	}
	if states[ids[0]] != wire.RequestExpired || states[ids[1]] != wire.RequestDenied || states[ids[2]] != wire.RequestExpired {
		t.Fatalf("listed %v", states)
	}
	if v, err := j.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Fatalf("integrity %q %v", v, err)
	}
}

// A listing is one snapshot. Between its read of the pending requests
// and its read of the ended ones, another connection expires a listed
// request: the listing still shows it once, pending, and takes no write
// lock that would hold the other connection up; the next listing shows
// it once, expired, after the pending ones. Before, the two reads saw
// two states and the request was listed twice.
func TestApprovalsListingIsOneSnapshot(t *testing.T) {
	j, ids := requested(t, 3)
	ctx := context.Background()
	var path string
	must(t, j.db.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path))
	other, err := openDB("file:" + path + "?_pragma=busy_timeout(2000)")
	must(t, err)
	defer other.Close()
	var wrote error
	j.SetCrashPoints(func(stage string) {
		if stage == "approvals:pending-read" {
			_, wrote = other.ExecContext(ctx, `INSERT INTO approval_expiries (approval_id, reason, expired_unix) VALUES (?, 'its requester went away', 1)`, ids[0])
		}
	})
	during, _, err := j.Approvals(ctx, "", 10)
	must(t, err)
	j.SetCrashPoints(nil)
	if wrote != nil {
		t.Fatalf("the other connection could not expire %s during the listing: %v", ids[0], wrote)
	}
	after, _, err := j.Approvals(ctx, "", 10)
	must(t, err)
	for name, c := range map[string]struct {
		l    []wire.ApprovalView
		want string
	}{
		"during": {during, ids[0] + ":pending " + ids[1] + ":pending " + ids[2] + ":pending"},
		"after":  {after, ids[1] + ":pending " + ids[2] + ":pending " + ids[0] + ":expired"},
	} {
		var got []string
		for _, v := range c.l {
			got = append(got, v.ID+":"+v.State.String())
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("the listing %s the expiry: %v, want %s", name, got, c.want)
		}
	}
}
