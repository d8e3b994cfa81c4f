package broker

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/broker/internal/identity"
	"warrant/broker/internal/seam"
	"warrant/broker/runner"
	"warrant/wire"
)

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// holdExecutor stands in for the lifecycle: it takes each launch, keeps a
// copy of its identity and what its Durable said, as the lifecycle asks
// before Proceed, and starts nothing. The action stays executing.
type holdExecutor struct {
	mu       sync.Mutex
	launched []*wire.CommandIdentity
	durable  []error
}

func (h *holdExecutor) Start(_ context.Context, l *runner.Launch, _ runner.Observer) error {
	err := l.Durable()
	h.mu.Lock()
	defer h.mu.Unlock()
	id := *l.Resolved.Identity()
	h.launched = append(h.launched, &id)
	h.durable = append(h.durable, err)
	l.Close()
	return nil
}

func (h *holdExecutor) Cancel(string, string) wire.CancelResult { return wire.CancelRejected }

// rig is a broker serving real sockets on a temporary state directory,
// with a workspace and an executable copied into it that tests may replace.
type rig struct {
	t         testing.TB
	b         *Broker
	cl        *client.Client
	clock     *fakeClock
	exec      *holdExecutor
	state     string
	workspace string
	tool      string // absolute path of a copy of /bin/true outside the workspace
}

// newRig opens the rig's broker with the probe skipped (seam.InsecureSkipProbe):
// the holdExecutor starts nothing, so there is nothing to probe.
func newRig(t *testing.T, mutate ...func(*Config)) *rig { return newRigTB(t, true, mutate...) }

// newProbedRig opens the rig's broker without the seam: its capability is
// decided as a production broker's is.
func newProbedRig(t *testing.T, mutate ...func(*Config)) *rig { return newRigTB(t, false, mutate...) }

func newRigTB(t testing.TB, skipProbe bool, mutate ...func(*Config)) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, clock: &fakeClock{t: time.Unix(1_700_000_000, 0)}, exec: &holdExecutor{},
		state: filepath.Join(dir, "state"), workspace: filepath.Join(dir, "ws")}
	must(t, os.MkdirAll(filepath.Join(r.workspace, "sub"), 0o755))
	must(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	r.tool = filepath.Join(dir, "bin", "tool")
	copyFile(t, "/bin/true", r.tool)
	cfg := Config{StateDir: r.state, Executor: r.exec, Now: r.clock.Now, Environ: []string{"LANG=C.UTF-8", "SECRET_TOKEN=x"},
		Logf: func(string, ...any) {}}
	for _, m := range mutate {
		m(&cfg)
	}
	seam.InsecureSkipProbe = skipProbe
	b, err := Open(context.Background(), cfg)
	seam.InsecureSkipProbe = false
	must(t, err)
	r.b = b
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Serve(ctx); close(done) }()
	// The socket file exists from bind(2), a moment before listen(2):
	// dial until the broker answers.
	for range 500 {
		if r.cl, err = client.Dial(r.state); err == nil {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	must(t, err)
	t.Cleanup(func() {
		r.cl.Close()
		cancel()
		<-done
		b.Close()
	})
	return r
}

func (r *rig) request(argv ...string) wire.ActionRequest {
	return wire.ActionRequest{Executable: r.tool, Argv: argv, Cwd: "sub", Profile: wire.ProfileShort}
}

// resolveReq resolves req in the rig's workspace in process, as Submit
// would; the descriptors are closed when the test ends.
func (r *rig) resolveReq(req wire.ActionRequest) (*identity.Resolved, error) {
	res, err := identity.Resolve(&wire.Submit{Workspace: r.workspace, Request: req}, r.b.admit.Protected, r.b.admit.Inputs, nil)
	if err == nil {
		r.t.Cleanup(res.Close)
	}
	return res, err
}

// resolved resolves r.request(), which must succeed.
func (r *rig) resolved() *identity.Resolved {
	r.t.Helper()
	res, err := r.resolveReq(r.request())
	must(r.t, err)
	return res
}

func (r *rig) submit(req wire.ActionRequest) client.Submitted {
	r.t.Helper()
	s, err := r.cl.Submit(r.workspace, req)
	must(r.t, err)
	return s
}

// approved submits req, expects an approval request, approves it with
// uses and an hour's ttl, and returns the request and the lease.
func (r *rig) approved(req wire.ActionRequest, uses uint32) (*wire.ApprovalView, *wire.LeaseView) {
	r.t.Helper()
	s := r.submit(req)
	if s.Approval == nil {
		r.t.Fatalf("submit: accepted %s without an approval", s.Handle)
	}
	l, err := r.cl.Approve(s.Approval.ID, uses, time.Hour)
	must(r.t, err)
	return s.Approval, l
}

func (r *rig) wantAccepted(req wire.ActionRequest) string {
	r.t.Helper()
	s := r.submit(req)
	if s.Handle == "" {
		r.t.Fatalf("submit: want accepted, got approval request %s", s.Approval.ID)
	}
	return s.Handle
}

func (r *rig) wantApproval(req wire.ActionRequest) *wire.ApprovalView {
	r.t.Helper()
	s := r.submit(req)
	if s.Approval == nil {
		r.t.Fatalf("submit: want an approval request, got accepted %s", s.Handle)
	}
	return s.Approval
}

func (r *rig) lease(id string) wire.LeaseView {
	r.t.Helper()
	l, err := r.cl.List(wire.ListLeases, false)
	must(r.t, err)
	for _, v := range l.Leases {
		if v.ID == id {
			return v
		}
	}
	r.t.Fatalf("lease %s not listed", id)
	return wire.LeaseView{}
}

func wantCode(t testing.TB, err error, code wire.Code) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("want %s, got %v", code, err)
	}
	if we.Message == "" {
		t.Fatalf("%s without a sentence", code)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	must(t, err)
	_, err = io.Copy(out, in)
	must(t, err)
	must(t, out.Close())
}

// resolveIn resolves req in the workspace ws, as Submit would.
func (r *rig) resolveIn(ws string, req wire.ActionRequest) (*identity.Resolved, error) {
	res, err := identity.Resolve(&wire.Submit{Workspace: ws, Request: req}, r.b.admit.Protected, r.b.admit.Inputs, nil)
	if err == nil {
		r.t.Cleanup(res.Close)
	}
	return res, err
}
