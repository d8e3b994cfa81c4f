package journal

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/wire"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// checkpointed opens a journal and takes one action through approval,
// lease and the EXECUTING checkpoint, as the broker's submit does.
func checkpointed(t *testing.T) (*Journal, string, string) {
	t.Helper()
	j, l, id := leased(t, 1)
	h, _, err := j.Checkpoint(context.Background(), l, "s", "", id, nil)
	must(t, err)
	return j, h, l.ID()
}

// opened opens a fresh journal and returns it with its default goal and
// an identity to ask approval for.
func opened(tb testing.TB) (*Journal, Goal, *wire.CommandIdentity) {
	tb.Helper()
	ctx := context.Background()
	j, err := Open(ctx, filepath.Join(tb.TempDir(), "journal.db"), time.Now)
	must(tb, err)
	tb.Cleanup(func() { j.Close() })
	g, err := j.Goal(ctx, DefaultGoal)
	must(tb, err)
	return j, g, &wire.CommandIdentity{Executable: wire.Executable{Requested: "true"}, Argv: []string{"x"},
		Workspace: wire.DirIdentity{Path: "/ws", Dev: 1, Ino: 2, MntID: 3}, Profile: wire.ProfileShort}
}

// leased opens a journal and approves one identity for uses uses; it
// returns the matched lease.
func leased(tb testing.TB, uses uint32) (*Journal, *Lease, *wire.CommandIdentity) {
	tb.Helper()
	ctx := context.Background()
	j, g, id := opened(tb)
	fp := []byte("0123456789abcdef0123456789abcdef")
	ar, err := j.RequestApproval(ctx, g, "s", id, fp, "limits", nil)
	must(tb, err)
	lv, err := j.Approve(ctx, ar.ID, uses, time.Hour, nil)
	must(tb, err)
	l, err := j.MatchLease(ctx, g, id.Workspace, fp)
	must(tb, err)
	if l == nil || l.ID() != lv.ID {
		tb.Fatalf("matched %v, want lease %s", l, lv.ID)
	}
	return j, l, id
}

// BenchmarkRecordOrigin is the cost the origin adds to every launch,
// beside the same transaction committed with an fsync (synchronous=FULL,
// as every other journal write) on the same disk in the same run.
func BenchmarkRecordOrigin(b *testing.B) {
	for _, c := range []struct {
		name   string
		record func(j *Journal, h string) error
	}{
		{"relaxed", func(j *Journal, h string) error {
			return j.RecordOrigin(context.Background(), h, Origin{Pid: 42, Start: 7, Boot: "b"})
		}},
		{"fsync-baseline", func(j *Journal, h string) error {
			return j.tx(context.Background(), func(tx *sql.Tx) error {
				_, err := tx.Exec(`INSERT INTO action_origins (handle, pid, start_ticks, boot_id) VALUES (?, 42, 7, 'b')`, h)
				return err
			})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			j, l, id := leased(b, MaxLeaseUses)
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if i > 0 && i%MaxLeaseUses == 0 { // the lease is spent: a new journal and lease
					j, l, id = leased(b, MaxLeaseUses)
				}
				h, _, err := j.Checkpoint(context.Background(), l, fmt.Sprintf("s%d", i), "", id, nil)
				must(b, err)
				b.StartTimer()
				must(b, c.record(j, h))
			}
		})
	}
}

// TestJournalRefusesWhatNoCodePathMayDo: the schema's triggers refuse to
// refund a lease use, un-revoke a lease, revive a finished or unknown
// action, lower a goal revision or change a capability report — even to
// SQL written by hand.
func TestJournalRefusesWhatNoCodePathMayDo(t *testing.T) {
	j, h, lease := checkpointed(t)
	ctx := context.Background()
	var left int
	must(t, j.db.QueryRowContext(ctx, `SELECT uses_left FROM leases WHERE id = ?`, lease).Scan(&left))
	if left != 0 {
		t.Fatalf("the checkpoint left %d uses, want 0", left)
	}
	if _, err := j.RecoverInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	must(t, j.Revoke(ctx, lease))
	must(t, j.SaveCapabilityReport(ctx, "k", "verified", []byte(`{}`)))
	for name, q := range map[string]string{
		"refund a use":          `UPDATE leases SET uses_left = uses_left + 1`,
		"un-revoke a lease":     `UPDATE leases SET revoked_unix = NULL`,
		"revive an action":      `UPDATE actions SET state = 'executing' WHERE handle = '` + h + `'`,
		"lower a revision":      `UPDATE goals SET revision = 0 WHERE id = 'default'`,
		"edit a capability row": `UPDATE capability_reports SET state = 'unavailable'`,
	} {
		if _, err := j.db.ExecContext(ctx, q); err == nil {
			t.Errorf("the journal let SQL %s", name)
		}
	}
	st, err := j.Status(ctx, h)
	must(t, err)
	if st.State != wire.StateUnknown {
		t.Fatalf("after recovery the action is %s, want unknown", st.State)
	}
	if v, err := j.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Fatalf("integrity %q %v", v, err)
	}
}

// TestJournalIsDurable: WAL with synchronous=FULL, so a commit is
// fsync'd before it returns.
func TestJournalIsDurable(t *testing.T) {
	j, _, _ := checkpointed(t)
	var mode string
	var sync int
	must(t, j.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	must(t, j.db.QueryRow(`PRAGMA synchronous`).Scan(&sync))
	if mode != "wal" || sync != 2 {
		t.Fatalf("journal_mode %s synchronous %d", mode, sync)
	}
}

// An executing action's origin is recorded once, read back exactly, never
// changed, and refused for an action that is not executing; the journal
// is back at synchronous=FULL after the relaxed commit.
func TestJournalRecordsOrigins(t *testing.T) {
	j, h, _ := checkpointed(t)
	ctx := context.Background()
	o := Origin{Pid: 4242, Start: 1<<40 + 7, Boot: "b0a7"}
	must(t, j.RecordOrigin(ctx, h, o))
	var sync int
	must(t, j.db.QueryRow(`PRAGMA synchronous`).Scan(&sync))
	if sync != 2 {
		t.Fatalf("synchronous is %d after RecordOrigin, want 2 (FULL)", sync)
	}
	got, err := j.Origins(ctx, []string{h, "act-none"})
	must(t, err)
	if len(got) != 1 || got[h] != o {
		t.Fatalf("origins %+v, want %s: %+v", got, h, o)
	}
	if err := j.RecordOrigin(ctx, h, Origin{Pid: 1, Boot: "x"}); err == nil {
		t.Fatal("a second origin was recorded")
	}
	if _, err := j.db.ExecContext(ctx, `UPDATE action_origins SET pid = 1`); err == nil {
		t.Fatal("the journal let SQL change an origin")
	}
	if err := j.RecordOrigin(ctx, "act-none", o); err == nil {
		t.Fatal("an origin was recorded for an action that does not exist")
	}
}

// TestJournalFilesArePrivate: journal.db, its WAL and its shared memory
// are 0600 even under umask 0, and an existing wider database is narrowed.
func TestJournalFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "journal.db")
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	j, err := Open(context.Background(), path, time.Now)
	must(t, err)
	defer j.Close()
	_, err = j.CreateGoal(context.Background(), "g", nil)
	must(t, err)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		must(t, err)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
}

// TestStoredValuesDecodeStrictly: a stored result that is not canonical
// CBOR (here: an unknown field) is an error, not a silently dropped field.
func TestStoredValuesDecodeStrictly(t *testing.T) {
	j, h, _ := checkpointed(t)
	ctx := context.Background()
	bad, err := wire.Canonical(map[string]any{"outcome": "exited", "surprise": 1})
	must(t, err)
	_, err = j.db.ExecContext(ctx, `UPDATE actions SET state = 'terminal', result = ? WHERE handle = ?`, bad, h)
	must(t, err)
	if _, err := j.Status(ctx, h); err == nil {
		t.Fatal("a stored result with an unknown field was decoded")
	}
}

// Checkpoint's commit is made durable by an fsync of the write-ahead log
// that it starts, on the descriptor held since Open: durable (and Flush)
// say so once that returned. An fsync that fails fails that wait and every
// later one; a log SQLite made anew (its connection discarded, as
// relaxedTx does) fails the sync that finds it, and is held from then on.
func TestCheckpointDurableWaitsForTheLogsSync(t *testing.T) {
	j, l, id := leased(t, 10)
	ctx := context.Background()
	var synced []fileID
	var fail error
	j.wal.fsync = func(fd int) error {
		var st syscall.Stat_t
		must(t, syscall.Fstat(fd, &st))
		synced = append(synced, fileID{uint64(st.Dev), uint64(st.Ino)})
		if fail != nil {
			return fail
		}
		return syscall.Fsync(fd)
	}
	checkpoint := func() error {
		_, durable, err := j.Checkpoint(ctx, l, fmt.Sprintf("s%d", len(synced)), "", id, nil)
		must(t, err)
		return durable()
	}
	walID := func() fileID {
		var st syscall.Stat_t
		must(t, syscall.Lstat(j.wal.path, &st))
		return fileID{uint64(st.Dev), uint64(st.Ino)}
	}
	if err := checkpoint(); err != nil || len(synced) != 1 || synced[0] != walID() {
		t.Fatalf("durable = %v after fsyncs of %v; the log is %v", err, synced, walID())
	}
	if err := j.Flush(); err != nil {
		t.Fatalf("Flush after a durable checkpoint: %v", err)
	}

	// The connection discarded: SQLite removes the log with it and makes
	// a new one at the next commit.
	conn, err := j.db.Conn(ctx)
	must(t, err)
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
	if err := checkpoint(); err == nil || !strings.Contains(err.Error(), "made anew") {
		t.Fatalf("durable = %v for a commit into a log made anew", err)
	}
	if err := checkpoint(); err != nil || synced[len(synced)-1] != walID() {
		t.Fatalf("durable = %v once the new log is held (fsync'd %v, the log %v)", err, synced[len(synced)-1], walID())
	}

	fail = syscall.EIO
	if err := checkpoint(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("durable = %v for a failed fsync", err)
	}
	fail = nil
	if err := checkpoint(); !errors.Is(err, syscall.EIO) || !errors.Is(j.Flush(), syscall.EIO) {
		t.Fatalf("after a failed fsync, durable = %v and Flush = %v", err, j.Flush())
	}
}

// Checkpoint leaves on its lease the record of the action it wrote, as
// Record reads it back (the identity equal under the canonical encoding:
// the fixture's nil lists read back empty), and none when it wrote
// nothing (here BUSY).
func TestCheckpointCarriesItsRecord(t *testing.T) {
	ctx := context.Background()
	j, l, id := leased(t, 2)
	id.Egress = []string{"example.org:443"}
	h, _, err := j.Checkpoint(ctx, l, "s", "build", id, nil)
	must(t, err)
	rec, err := j.Record(ctx, h)
	must(t, err)
	if got := l.Checkpointed(); got == nil || !sameRecord(got, rec) || rec.Approved == nil || len(rec.Events) != 1 {
		t.Fatalf("the checkpoint's record %+v, read back %+v", got, rec)
	}
	if _, _, err := j.Checkpoint(ctx, l, "s", "", id, nil); err == nil || l.Checkpointed() != nil {
		t.Fatalf("a second action of the session: %v, record %+v", err, l.Checkpointed())
	}
}

// sameRecord reports whether a and b are the same record, their
// identities compared under the canonical encoding.
func sameRecord(a, b *Record) bool {
	ea, erra := wire.Canonical(&a.Identity)
	eb, errb := wire.Canonical(&b.Identity)
	x, y := *a, *b
	x.Identity, y.Identity = wire.CommandIdentity{}, wire.CommandIdentity{}
	return erra == nil && errb == nil && bytes.Equal(ea, eb) && reflect.DeepEqual(x, y)
}

// The log transaction's Finish records the end and links the receipt in
// one write: the result (naming the receipt), the state and the event;
// an action already finished, or already holding a receipt, is refused
// and nothing of the transaction stays.
func TestLogTxFinishLinksTheReceipt(t *testing.T) {
	ctx := context.Background()
	j, h, _ := checkpointed(t)
	res := &wire.Result{Outcome: wire.KnownNotExecuted, ReceiptID: "r-1"}
	must(t, j.InLogTx(ctx, func(tx *LogTx) error { return tx.Finish(h, res, "r-1") }))
	st, err := j.Status(ctx, h)
	must(t, err)
	rec, err := j.Record(ctx, h)
	must(t, err)
	var linked string
	must(t, j.db.QueryRowContext(ctx, `SELECT receipt_id FROM actions WHERE handle = ?`, h).Scan(&linked))
	if st.State != wire.StateTerminal || st.Result == nil || st.Result.ReceiptID != "r-1" || linked != "r-1" ||
		rec.Events[len(rec.Events)-1].Kind != "TERMINATED" {
		t.Fatalf("finished: %+v, linked %q, events %+v", st, linked, rec.Events)
	}
	if err := j.InLogTx(ctx, func(tx *LogTx) error { return tx.Finish(h, res, "r-2") }); err == nil {
		t.Fatal("finished twice")
	}
	j2, h2, _ := checkpointed(t)
	err = j2.InLogTx(ctx, func(tx *LogTx) error {
		must(t, tx.LinkReceipt(h2, "r-3"))
		return tx.Finish(h2, res, "r-4")
	})
	must(t, j2.db.QueryRowContext(ctx, `SELECT receipt_id FROM actions WHERE handle = ?`, h2).Scan(&linked))
	if st, _ := j2.Status(ctx, h2); err == nil || st.State != wire.StateAccepted || linked != "" {
		t.Fatalf("an action with a receipt finished with another: %v, %+v, linked %q", err, st, linked)
	}
}
