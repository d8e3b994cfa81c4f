package clid

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"warrant/broker"
	"warrant/broker/internal/seam"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/receipt"
	"warrant/wire"
)

// sealer stands in for the runner: it records a real stream through a
// real Recorder under the broker's HMAC key and reports an exited action
// to the broker's observer, which seals its receipt, without starting a
// process. With
// hold it starts nothing and seals nothing (the action stays in flight);
// with fail it refuses to start.
type sealer struct {
	mu   sync.Mutex
	t    testing.TB
	out  string
	hold bool
	fail error
}

func (s *sealer) Start(_ context.Context, l *runner.Launch, obs runner.Observer) error {
	defer l.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.hold {
		return nil
	}
	id := l.Resolved.Identity()
	now := time.Now()
	code := 0
	run := &lifecycle.Result{Outcome: wire.Exited, Ready: &wire.Ready{LandlockABI: 7, SeccompDigest: bytes.Repeat([]byte{0x5e}, 32),
		Binding: wire.SealedSnapshot, ExecutedSHA256: id.Executable.File.SHA256, Workspace: id.Workspace, Cwd: id.Cwd},
		Pid: 4242, Started: now, RootExited: true, RootExitAt: now, ExitCode: &code,
		GroupGone: true, ByCgroup: true, GoneAt: now, StreamsComplete: true}
	rules, err := receipt.NewRuleset()
	if err != nil {
		return err
	}
	var streams []*receipt.Captured
	for _, st := range []receipt.StreamName{receipt.Stdout, receipt.Stderr} {
		rec, err := receipt.NewRecorder(receipt.RecorderConfig{Stream: st, Retain: 64, Budget: 1 << 20,
			MACKey: l.MACKey, Rules: rules})
		if err != nil {
			return err
		}
		if st == receipt.Stdout {
			io.WriteString(rec, s.out)
		}
		c, err := rec.Close()
		if err != nil {
			return err
		}
		streams = append(streams, c)
	}
	obs.Event(lifecycle.Event{Kind: receipt.EventStarted, Wall: now})
	code32 := int32(0)
	obs.End(&runner.Observation{Result: &wire.Result{Outcome: wire.Exited, ExitCode: &code32, GroupGone: true}, Run: run,
		Events:  []lifecycle.Event{{Kind: receipt.EventStarted, Wall: now}, {Kind: receipt.EventTerminated, Wall: now}},
		Streams: streams})
	return nil
}

func (s *sealer) Cancel(string, string) wire.CancelResult { return wire.CancelRejected }

// stateRig is a broker on a temporary state directory with a workspace
// and a tool (a copy of /bin/true) outside it, in a directory of its own:
// the directory above the state directory is never granted.
type stateRig struct {
	t               testing.TB
	b               *broker.Broker
	exec            *sealer
	state, ws, tool string
	witness         string // Config.Witness of the next open
}

func newStateRig(t testing.TB) *stateRig { return newStateRigWith(t, nil) }

// newStateRigWith is newStateRig with prepare (may be nil) run on the
// state directory, not yet created, before the broker's first Open.
func newStateRigWith(t testing.TB, prepare func(state string)) *stateRig {
	t.Helper()
	dir := t.TempDir()
	r := &stateRig{t: t, state: filepath.Join(dir, "state"), ws: filepath.Join(dir, "ws"),
		tool: filepath.Join(dir, "bin", "tool"), exec: &sealer{t: t, out: "hello\n"}}
	must(t, os.Mkdir(r.ws, 0o755))
	must(t, os.Mkdir(filepath.Dir(r.tool), 0o755))
	raw, err := os.ReadFile("/bin/true")
	must(t, err)
	must(t, os.WriteFile(r.tool, raw, 0o755))
	if prepare != nil {
		prepare(r.state)
	}
	r.open()
	t.Cleanup(r.close)
	return r
}

func (r *stateRig) open() {
	r.t.Helper()
	seam.InsecureSkipProbe = true // the sealer starts nothing: there is nothing to probe
	b, err := broker.Open(context.Background(), broker.Config{StateDir: r.state, Executor: r.exec, Logf: r.t.Logf, Witness: r.witness})
	seam.InsecureSkipProbe = false
	must(r.t, err)
	r.b = b
}

func (r *stateRig) close() {
	if r.b != nil {
		r.b.Close()
		r.b = nil
	}
}

// run submits the tool (approving the first time) and returns its handle.
func (r *stateRig) run() string {
	r.t.Helper()
	ctx := context.Background()
	s := &wire.Submit{Workspace: r.ws, Request: wire.ActionRequest{Executable: r.tool, Argv: []string{"x"}, Cwd: ".", Profile: wire.ProfileShort}}
	m, err := r.b.Submit(ctx, s)
	must(r.t, err)
	if ar, ok := m.(*wire.ApprovalRequired); ok {
		if reply := r.b.HandleOperator(ctx, &wire.Approve{RequestID: ar.Request.ID, Uses: 1000, TTLSeconds: 3600}); reply.Type() != wire.TypeLeaseGranted {
			r.t.Fatalf("approve: %+v", reply)
		}
		if m, err = r.b.Submit(ctx, s); err != nil {
			r.t.Fatal(err)
		}
	}
	acc, ok := m.(*wire.Accepted)
	if !ok {
		r.t.Fatalf("submit: %+v", m)
	}
	return acc.Handle
}

// cli runs `broker ARGS --state STATE` and returns its exit status and output.
func (r *stateRig) cli(args ...string) (int, string) {
	var out, errs bytes.Buffer
	code := Main(append(args, "--state", r.state), &out, &errs)
	return code, out.String() + errs.String()
}

// tamper edits the journal file as an attacker with the broker's uid
// would, with the broker closed, and returns the rows changed.
func (r *stateRig) tamper(query string) int64 {
	r.t.Helper()
	var n int64
	r.rawJournal(func(db *sql.Conn) {
		res, err := db.ExecContext(context.Background(), query)
		must(r.t, err)
		n, err = res.RowsAffected()
		must(r.t, err)
	})
	return n
}

// count runs a counting query on the journal file, with the broker closed.
func (r *stateRig) count(query string) int {
	r.t.Helper()
	var n int
	r.rawJournal(func(db *sql.Conn) { must(r.t, db.QueryRowContext(context.Background(), query).Scan(&n)) })
	return n
}

// rawJournal opens the journal file with plain SQL, outside the broker.
func (r *stateRig) rawJournal(fn func(*sql.Conn)) {
	r.t.Helper()
	r.close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.state, "journal.db"))
	must(r.t, err)
	defer db.Close()
	c, err := db.Conn(context.Background())
	must(r.t, err)
	defer c.Close()
	fn(c)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
