package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"warrant/internal/retry"
	"warrant/wire"
)

// Journal is the broker's durable record: goals, approval requests, leases,
// actions and their events, and receipts, in one SQLite database in WAL
// mode with synchronous=FULL, so that a committed transaction has been
// fsync'd before Commit returns.
//
// Every method runs on a single connection, so transactions are serialized
// in the process; the state-directory lock keeps other processes out.
type Journal struct {
	db    *sql.DB
	wal   *walLog // the write-ahead log syncAhead makes durable; nil for OpenReadOnly
	now   func() time.Time
	crash func(stage string) // the crash test's seam; nil in production
}

// SetCrashPoints installs f, called at the named points of the approve
// and checkpoint transactions ("approve:in-tx", "checkpoint:begin",
// "checkpoint:in-tx", "checkpoint:committed") and between the two reads
// of an approvals listing ("approvals:pending-read"). The crash test's
// seam (broker/internal/seam) uses it to SIGKILL a real daemon there,
// and this package's tests to write from another connection there.
func (j *Journal) SetCrashPoints(f func(stage string)) { j.crash = f }

func (j *Journal) crashPoint(stage string) {
	if j.crash != nil {
		j.crash(stage)
	}
}

// Open opens (creating if needed) the journal at path, applies the
// schema migrations and returns it. The caller must hold the state
// directory's lock. The database is created (or narrowed to) 0600 whatever
// the umask, before SQLite opens it: SQLite gives its WAL and
// shared-memory files the database's mode.
func Open(ctx context.Context, path string, now func() time.Time) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && fi.Mode().Perm() != 0o600 {
			err = f.Chmod(0o600) // only a mode that is not 0600 is set: its ctime is evidence
		}
		f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Set("_txlock", "immediate")
	db, err := openDB("file:" + path + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("open journal: journal_mode is %q, want wal (%v)", mode, err)
	}
	var sync int
	if err := db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil || sync != 2 {
		db.Close()
		return nil, fmt.Errorf("open journal: synchronous is %d, want 2 (FULL) (%v)", sync, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate journal: %w", err)
	}
	wal, err := openWAL(path + "-wal")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	return &Journal{db: db, wal: wal, now: now}, nil
}

// Close closes the database.
func (j *Journal) Close() error {
	if j.wal != nil {
		j.wal.close()
	}
	return j.db.Close()
}

// IntegrityCheck runs PRAGMA integrity_check and returns its verdict ("ok"
// when the database is sound).
func (j *Journal) IntegrityCheck(ctx context.Context) (string, error) {
	var verdict string
	if err := j.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&verdict); err != nil {
		return "", fmt.Errorf("check journal integrity: %w", err)
	}
	return verdict, nil
}

// RecoverInterrupted marks every action left executing or running by a
// previous broker as unknown. Its lease use stays spent and nothing is
// re-run: the effect may or may not have happened, and only the operator
// can classify it. It returns the handles it marked.
func (j *Journal) RecoverInterrupted(ctx context.Context) ([]string, error) {
	var handles []string
	err := j.tx(ctx, func(tx *sql.Tx) error {
		var err error
		handles, err = column[string](ctx, tx, `SELECT handle FROM actions WHERE state IN ('executing', 'running') ORDER BY created_unix, handle`)
		if err != nil {
			return err
		}
		res := UnknownResult("the broker stopped while the action was executing; whether it ran, and what it did, is unknown")
		blob, err := wire.Canonical(res)
		if err != nil {
			return err
		}
		for _, h := range handles {
			if _, err := tx.ExecContext(ctx, `UPDATE actions SET state = 'unknown', outcome = 'unknown', result = ?, updated_unix = ? WHERE handle = ?`,
				blob, j.now().Unix(), h); err != nil {
				return err
			}
			if err := j.event(ctx, tx, h, "UNKNOWN_TERMINATION", "broker restarted with the action in flight"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("recover interrupted actions: %w", err)
	}
	return handles, nil
}

// UnknownResult is the result of an action whose end was not observed.
func UnknownResult(why string) *wire.Result {
	return &wire.Result{Outcome: wire.OutcomeUnknown, Error: wire.Errorf(wire.CodeUnknownOutcome, "%s", why)}
}

// tx runs fn in one IMMEDIATE transaction and commits it (fsync'd, since
// synchronous=FULL), or rolls it back if fn fails.
func (j *Journal) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := j.db.BeginTx(ctx, nil)
	return commitTx(tx, err, fn)
}

// commitTx runs fn in tx (begun with err) and commits it, or rolls it
// back if fn fails.
func commitTx(tx *sql.Tx, err error, fn func(*sql.Tx) error) error {
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// relaxedTx is tx committed with synchronous=NORMAL: durable across the
// death of this process, not across the host's. The single connection is
// held for it, and set back to FULL before it is released; if that fails
// it is discarded, and the pool's next connection opens with FULL.
func (j *Journal) relaxedTx(ctx context.Context, fn func(*sql.Tx) error) error {
	conn, err := j.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("take the connection: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return fmt.Errorf("relax synchronous: %w", err)
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = FULL`); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	return commitTx(tx, err, fn)
}

// syncAhead starts an fsync of the write-ahead log, which makes every
// transaction committed before it durable across the host's crash, as a
// synchronous=FULL commit would have, and returns the wait for it (also
// what Flush waits for, until a later syncAhead).
func (j *Journal) syncAhead() func() error {
	done := make(chan error, 1)
	go func() { done <- j.wal.sync() }()
	wait := sync.OnceValue(func() error { return <-done })
	j.wal.pending.Store(&wait)
	return wait
}

// SetFsync replaces the write-ahead log's fsync (syscall.Fsync, given the
// held descriptor). Only tests call it, to make a sync fail.
func (j *Journal) SetFsync(f func(fd int) error) {
	j.wal.mu.Lock()
	j.wal.fsync = f
	j.wal.mu.Unlock()
}

// Flush waits until every transaction committed before the latest
// syncAhead is durable, or says why it is not: what is answered after it
// reflects no record a host's crash could take back.
func (j *Journal) Flush() error {
	if j.wal == nil { // OpenReadOnly: it commits nothing
		return nil
	}
	if w := j.wal.pending.Load(); w != nil {
		return (*w)()
	}
	return nil
}

// walLog is the journal's write-ahead log, held open from Open on, so
// that an fsync of it reports every write-back error of the file since
// then, whoever's write it was (the kernel's errseq: a descriptor opened
// after an error that another fsync already reported would not see it).
type walLog struct {
	path    string
	fsync   func(fd int) error           // syscall.Fsync; tests replace it
	pending atomic.Pointer[func() error] // the latest syncAhead's wait

	mu     sync.Mutex // one sync at a time: fd, id and failed
	fd     int
	id     fileID // what fd is, to notice a log SQLite made anew
	failed error  // the first failed fsync: every later sync fails too
}

// openWAL opens the write-ahead log at path, which must be a regular
// file, never following a link and without blocking.
func openWAL(path string) (*walLog, error) {
	w := &walLog{path: path, fsync: syscall.Fsync, fd: -1}
	return w, w.open()
}

func (w *walLog) open() error {
	fd, err := syscall.Open(w.path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the write-ahead log %s: %w", w.path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return fmt.Errorf("fstat the write-ahead log %s: %w", w.path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return fmt.Errorf("the write-ahead log %s is not a regular file", w.path)
	}
	w.close()
	w.fd, w.id = fd, fileID{uint64(st.Dev), uint64(st.Ino)}
	return nil
}

// fileID is a file's identity: (dev, ino).
type fileID struct{ dev, ino uint64 }

func (w *walLog) close() {
	if w.fd >= 0 {
		syscall.Close(w.fd)
		w.fd = -1
	}
}

// sync fsyncs the log held open. The log SQLite writes is the one held
// unless its single connection was discarded (relaxedTx), when SQLite
// removes the log with its last connection and the next commit makes a
// new one: the commits in it were written before it could be held, so
// that sync fails, nothing is run on them, and the new log and its
// directory entry are made durable and held from then on. An fsync that
// fails leaves every later sync failing: after a write-back error the
// kernel may have dropped the pages, and a later fsync would not say so.
func (w *walLog) sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed != nil {
		return w.failed
	}
	var st syscall.Stat_t
	if err := syscall.Stat(w.path, &st); err != nil {
		return fmt.Errorf("the write-ahead log %s: %w", w.path, err)
	}
	if (fileID{uint64(st.Dev), uint64(st.Ino)}) != w.id {
		if err := w.adopt(); err != nil {
			return err
		}
		return fmt.Errorf("the write-ahead log %s was made anew under this commit", w.path)
	}
	if err := retry.EINTR(func() error { return w.fsync(w.fd) }); err != nil {
		w.failed = fmt.Errorf("fsync %s: %w", w.path, err)
		return w.failed
	}
	return nil
}

// adopt holds the log at path from now on, made durable with its
// directory entry.
func (w *walLog) adopt() error {
	if err := w.open(); err != nil {
		return err
	}
	dir, err := syscall.Open(filepath.Dir(w.path), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err == nil {
		err = retry.EINTR(func() error { return w.fsync(w.fd) })
		if err == nil {
			err = retry.EINTR(func() error { return w.fsync(dir) })
		}
		syscall.Close(dir)
	}
	if err != nil {
		w.failed = fmt.Errorf("make the new write-ahead log %s durable: %w", w.path, err)
		return w.failed
	}
	return nil
}

type rowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// column runs a query returning one column and collects its values.
func column[T any](ctx context.Context, q rowsQuerier, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// event appends one event to an action's history, at now.
func (j *Journal) event(ctx context.Context, tx *sql.Tx, handle, kind, detail string) error {
	_, err := j.eventAt(ctx, tx, handle, kind, detail)
	return err
}

// eventAt is event, and returns the time recorded, as Record reads it.
func (j *Journal) eventAt(ctx context.Context, tx *sql.Tx, handle, kind, detail string) (time.Time, error) {
	ns := j.now().UnixNano()
	_, err := tx.ExecContext(ctx, `INSERT INTO action_events (handle, seq, kind, at_unix_ns, detail)
		VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM action_events WHERE handle = ?), ?, ?, ?)`,
		handle, handle, kind, ns, detail)
	if err != nil {
		return time.Time{}, fmt.Errorf("record %s event: %w", kind, err)
	}
	return time.Unix(0, ns), nil
}

// NewID returns prefix followed by 96 random bits in hex: the form of
// every id the journal stores (goals, approval requests, leases, actions,
// receipts).
func NewID(prefix string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("journal: internal error: crypto/rand: " + err.Error())
	}
	return prefix + hex.EncodeToString(b[:])
}

// OpenReadOnly opens the journal at path read-only. It takes no lock and
// creates nothing, so it works beside a running broker; SQLite's WAL gives
// each transaction one consistent snapshot. A missing journal is an error
// wrapping fs.ErrNotExist.
func OpenReadOnly(path string) (*Journal, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := openDB("file:" + path + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open journal read-only: %w", err)
	}
	db.SetMaxOpenConns(1)
	return &Journal{db: db, now: time.Now}, nil
}
