package journal

import (
	"context"
	"path/filepath"
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

// at sets the journal's clock to d after start.
func at(j *Journal, start time.Time, d time.Duration) {
	j.now = func() time.Time { return start.Add(d) }
}

// A request still pending RequestTTL after it was made expires, as of
// that moment and saying why; until then it stays pending, whoever
// asked for it. Expired, it is final: it cannot be approved or denied,
// by the journal's code or by SQL, its expiry is never changed, and the
// same action asks anew.
func TestExpiredRequestIsFinal(t *testing.T) {
	j, ids := requested(t, 3)
	ctx := context.Background()
	start := time.Now()
	must(t, j.Deny(ctx, ids[1], "no"))
	at(j, start, RequestTTL-2*time.Second)
	if d, err := j.Decision(ctx, ids[0]); err != nil || d.State != wire.RequestPending {
		t.Fatalf("a request just short of its TTL: %+v %v; want pending", d, err)
	}
	at(j, start, RequestTTL+time.Second)
	_, err := j.Approve(ctx, ids[0], 1, time.Hour, nil)
	if err == nil || !strings.Contains(err.Error(), "expired because no one decided it within 30m0s") {
		t.Fatalf("approve the overdue request: %v", err)
	}
	if err := j.Deny(ctx, ids[0], "x"); err == nil {
		t.Fatal("denied an overdue request")
	}
	d, err := j.Decision(ctx, ids[0])
	if err != nil || d.State != wire.RequestExpired || d.Reason != "no one decided it within 30m0s" {
		t.Fatalf("decision of the overdue request: %+v %v", d, err)
	}
	var created, expired int64
	must(t, j.db.QueryRowContext(ctx, `SELECT r.created_unix, e.expired_unix FROM approval_requests r JOIN approval_expiries e ON e.approval_id = r.id
		WHERE r.id = ?`, ids[0]).Scan(&created, &expired))
	if expired != created+int64(RequestTTL/time.Second) {
		t.Fatalf("expired at %d, made at %d: want the moment its TTL ran out", expired, created)
	}
	g, err := j.Goal(ctx, DefaultGoal)
	must(t, err)
	v, err := j.Request(ctx, ids[0])
	must(t, err)
	pending, err := j.RequestApproval(ctx, g, "s", &v.Identity, []byte("another-fingerprint-0123456789ab"), "limits", nil)
	must(t, err)
	for name, q := range map[string]string{
		"decide an expired request": `UPDATE approval_requests SET state = 'approved' WHERE id = '` + ids[0] + `'`,
		"edit an expiry":            `UPDATE approval_expiries SET reason = 'x'`,
		"remove an expiry":          `DELETE FROM approval_expiries`,
		"expire a decided request":  `INSERT INTO approval_expiries VALUES ('` + ids[1] + `', 'x', 0)`,
		"lease an expired request":  `INSERT INTO leases SELECT 'l-x', '` + ids[0] + `', 'default', 1, 1, 2, 3, fingerprint, 0, 9, 1, 1, NULL, '' FROM approval_requests WHERE id = '` + ids[0] + `'`,
		"expire without saying why": `INSERT INTO approval_expiries VALUES ('` + pending.ID + `', '', 0)`,
		"expire an unknown request": `INSERT INTO approval_expiries VALUES ('ar-none', 'x', 0)`,
		"unmirror an expiry":        `UPDATE approval_requests SET expired_unix = NULL WHERE id = '` + ids[0] + `'`,
		"mirror no expiry":          `UPDATE approval_requests SET expired_unix = 1 WHERE id = '` + ids[1] + `'`,
	} {
		if _, err := j.db.ExecContext(ctx, q); err == nil {
			t.Errorf("the journal let SQL %s", name)
		}
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
	if states[ids[0]] != wire.RequestExpired || states[ids[1]] != wire.RequestDenied || states[ids[2]] != wire.RequestExpired ||
		states[pending.ID] != wire.RequestPending {
		t.Fatalf("listed %v", states)
	}
	again, err := j.RequestApproval(ctx, g, "s", &v.Identity, v.Fingerprint, "limits", nil)
	must(t, err)
	if again.ID == ids[0] || again.State != wire.RequestPending {
		t.Fatalf("the same action after its request expired: %+v; want a new pending request", again)
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
			_, wrote = other.ExecContext(ctx, `INSERT INTO approval_expiries (approval_id, reason, expired_unix) VALUES (?, 'no one decided it', 1)`, ids[0])
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

// A journal written before migration 10 keeps its expiries: they are
// mirrored into approval_requests.expired_unix, so an expired request
// stays expired and listed so, and a request pending then is pending
// still, until its TTL.
func TestMigrationMirrorsExpiries(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	old, err := openDB("file:" + path + "?_pragma=journal_mode(WAL)")
	must(t, err)
	_, err = old.ExecContext(ctx, `CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (9)`)
	must(t, err)
	for _, m := range migrations[:9] {
		_, err := old.ExecContext(ctx, m)
		must(t, err)
	}
	now := time.Now().Unix()
	blob, err := wire.Canonical(&wire.CommandIdentity{Executable: wire.Executable{Requested: "true"}, Workspace: wire.DirIdentity{Path: "/ws"},
		Profile: wire.ProfileShort})
	must(t, err)
	_, err = old.ExecContext(ctx, `INSERT INTO approval_requests (id, goal, goal_revision, session, fingerprint, identity, limitations, created_unix, state)
		VALUES ('ar-gone', 'default', 1, '', x'00', ?1, '', ?2, 'pending'), ('ar-live', 'default', 1, '', x'01', ?1, '', ?2, 'pending');
		INSERT INTO approval_expiries VALUES ('ar-gone', 'its requester went away', ?2)`, blob, now)
	must(t, err)
	must(t, old.Close())
	j, err := Open(ctx, path, time.Now)
	must(t, err)
	defer j.Close()
	for id, want := range map[string]wire.RequestState{"ar-gone": wire.RequestExpired, "ar-live": wire.RequestPending} {
		d, err := j.Decision(ctx, id)
		if err != nil || d.State != want {
			t.Errorf("%s after the migration: %+v %v; want %s", id, d, err, want)
		}
	}
	var mirrored int64
	must(t, j.db.QueryRowContext(ctx, `SELECT expired_unix FROM approval_requests WHERE id = 'ar-gone'`).Scan(&mirrored))
	if mirrored != now {
		t.Fatalf("expired_unix %d, want the expiry's %d", mirrored, now)
	}
	l, _, err := j.Approvals(ctx, "", 10)
	must(t, err)
	if len(l) != 2 || l[0].ID != "ar-live" || l[1].ID != "ar-gone" || l[1].Reason != "its requester went away" {
		t.Fatalf("listed %+v; want ar-live pending, then ar-gone expired", l)
	}
}

// A listing only reads, and shows a request past its TTL as expired,
// for the reason it will expire with, even before a write has expired
// it: so does a journal opened read-only (`broker approvals` beside no
// daemon), which cannot.
func TestListingShowsOverdueExpired(t *testing.T) {
	ctx := context.Background()
	j, g, id := opened(t)
	start := time.Now()
	at(j, start, 0)
	old, err := j.RequestApproval(ctx, g, "s", id, []byte("old-fingerprint-0123456789abcdef"), "limits", nil)
	must(t, err)
	at(j, start, RequestTTL/2)
	live, err := j.RequestApproval(ctx, g, "s", id, []byte("new-fingerprint-0123456789abcdef"), "limits", nil)
	must(t, err)
	at(j, start, RequestTTL)
	var path string
	must(t, j.db.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path))
	ro, err := OpenReadOnly(path)
	must(t, err)
	defer ro.Close()
	ro.now = j.now
	for name, jj := range map[string]*Journal{"read-write": j, "read-only": ro} {
		l, _, err := jj.Approvals(ctx, "", 10)
		must(t, err)
		var got []string
		for _, v := range l {
			got = append(got, v.ID+":"+v.State.String()+":"+v.Reason)
		}
		if want := live.ID + ":pending: " + old.ID + ":expired:" + overdueReason; strings.Join(got, " ") != want {
			t.Errorf("%s listing: %q; want %q", name, got, want)
		}
		if v, err := jj.Request(ctx, old.ID); err != nil || v.State != wire.RequestExpired {
			t.Errorf("%s: the overdue request reads %+v %v; want expired", name, v, err)
		}
	}
	var n int
	must(t, j.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM approval_expiries`).Scan(&n))
	if n != 0 {
		t.Fatalf("the listings wrote %d expiries", n)
	}
}

// A listing reads the clock once: a request that turns overdue while the
// listing runs is listed as it stood then (pending among the pending),
// never among the pending yet read as expired.
func TestListingReadsTheClockOnce(t *testing.T) {
	ctx := context.Background()
	j, ids := requested(t, 1)
	v, err := j.Request(ctx, ids[0])
	must(t, err)
	edge := time.Unix(v.CreatedUnix, 0).Add(RequestTTL - time.Second)
	var reads int
	j.now = func() time.Time { reads++; return edge.Add(time.Duration(reads-1) * time.Second) } // each read a second later
	l, _, err := j.Approvals(ctx, "", 10)
	must(t, err)
	if len(l) != 1 || l[0].ID != ids[0] || l[0].State != wire.RequestPending {
		t.Fatalf("listed %+v; want %s pending, as it stood when the listing began", l, ids[0])
	}
}
