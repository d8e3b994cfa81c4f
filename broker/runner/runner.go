package runner

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"warrant/broker"
	"warrant/broker/lifecycle"
	"warrant/internal/profile"
	"warrant/receipt"
	"warrant/wire"
)

// projectChars bounds each stream's agent-facing projection.
const projectChars = 32 << 10

// Runner implements broker.Executor.
type Runner struct {
	launcher *pinned
	cgroups  *lifecycle.Cgroups // nil: supervision by process group alone
	rules    *receipt.Ruleset
	live     func(handle string, stream receipt.StreamName, redacted []byte)

	b       *broker.Broker
	mu      sync.Mutex
	running map[string]chan struct{} // handle → closed to cancel
	wg      sync.WaitGroup
}

// Options configure a Runner.
type Options struct {
	// Launcher is the launcher binary; it is pinned at New.
	Launcher string
	// Scope names this broker's cgroup directory (one per state
	// directory, which the broker holds locked).
	Scope string
	// Live, if set, receives each stream's redacted output as it is
	// released (for `broker run` in the foreground). It must not keep the
	// slice.
	Live func(handle string, stream receipt.StreamName, redacted []byte)
}

// New pins the launcher, makes this process the subreaper of its
// descendants and looks for a writable cgroup v2 directory. Logf, when not
// nil, is told why cgroups are not used.
func New(o Options, logf func(string, ...any)) (*Runner, error) {
	l, err := pin(o.Launcher)
	if err != nil {
		return nil, err
	}
	if err := lifecycle.BecomeSubreaper(); err != nil {
		l.close()
		return nil, err
	}
	rules, err := receipt.NewRuleset()
	if err != nil {
		l.close()
		return nil, fmt.Errorf("build redaction rules: %w", err)
	}
	r := &Runner{launcher: l, rules: rules, live: o.Live, running: map[string]chan struct{}{}}
	if cg, err := lifecycle.DetectCgroups(o.Scope); err == nil {
		r.cgroups = cg
	} else if logf != nil {
		logf("no per-action cgroup (%v); supervising by process group", err)
	}
	return r, nil
}

// Attach gives the runner the broker whose actions it runs. It must be
// called before the broker accepts any submission. It reports the
// processes of earlier actions that outlived a previous broker on this
// state directory (their outcome is already unknown): in the log and as a
// SURVIVORS event in each action's journal. They are left running; the
// operator decides about processes this broker did not start.
func (r *Runner) Attach(b *broker.Broker) {
	r.b = b
	if r.cgroups == nil {
		return
	}
	left, err := r.cgroups.Leftovers()
	if err != nil {
		b.Logf("look for processes left by a previous broker: %v", err)
	}
	for _, l := range left {
		detail := fmt.Sprintf("processes %v of this action outlived the broker that started it; they are still running in cgroup %s/%s (end them with: echo 1 > %s/%s/cgroup.kill)",
			l.Pids, r.cgroups.Dir(), l.ID, r.cgroups.Dir(), l.ID)
		b.Logf("action %s: %s", l.ID, detail)
		if err := b.RecordEvent(context.Background(), l.ID, "SURVIVORS", detail); err != nil {
			b.Logf("action %s: journal its survivors: %v", l.ID, err)
		}
	}
}

// LauncherDigest is the SHA-256 of the pinned launcher, hex encoded.
func (r *Runner) LauncherDigest() string { return hex.EncodeToString(r.launcher.sum[:]) }

// Cgroups reports the cgroup directory actions run in, or "".
func (r *Runner) Cgroups() string {
	if r.cgroups == nil {
		return ""
	}
	return r.cgroups.Dir()
}

// Close waits for every action in flight to end, then releases the pinned
// launcher.
func (r *Runner) Close() {
	r.wg.Wait()
	r.launcher.close()
	if r.cgroups != nil {
		r.cgroups.Remove()
	}
}

// Start launches l in the background. It owns l from here on.
func (r *Runner) Start(_ context.Context, l *broker.Launch) error {
	if r.b == nil {
		panic("runner: internal error: Start before Attach")
	}
	cancel := make(chan struct{})
	r.mu.Lock()
	r.running[l.Handle] = cancel
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer l.Close()
		r.run(l, cancel)
		r.mu.Lock()
		delete(r.running, l.Handle)
		r.mu.Unlock()
	}()
	return nil
}

// Cancel asks a running action to end. Nothing is undone.
func (r *Runner) Cancel(handle, _ string) wire.CancelResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.running[handle]
	if !ok {
		return wire.CancelUnknown
	}
	select {
	case <-c:
	default:
		close(c)
	}
	return wire.CancelAccepted
}

// SpawnRequest is the launcher request for l.
func SpawnRequest(l *broker.Launch) *wire.SpawnRequest {
	id := &l.Resolved.Identity
	env := append([]wire.EnvVar{{Name: "HOME", Value: l.Home}, {Name: "TMPDIR", Value: l.Tmp}}, id.Env...)
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return &wire.SpawnRequest{
		Argv:        append([]string{id.Executable.Requested}, id.Argv...),
		Env:         env,
		Workspace:   id.Workspace,
		Cwd:         id.Cwd,
		Executable:  id.Executable.File,
		Interpreter: id.Executable.Interpreter,
		Snapshots:   l.Snapshot != nil,
		Profile:     id.Profile,
		Policy:      id.Policy,
		Home:        l.Home,
		Tmp:         l.Tmp,
	}
}

// spec is the lifecycle launch of l.
func (r *Runner) spec(l *broker.Launch, out, errs io.Writer, cancel <-chan struct{}, onEvent func(lifecycle.Event)) lifecycle.Spec {
	var snaps []*os.File
	for _, f := range []*os.File{l.Snapshot, l.InterpSnapshot} {
		if f != nil {
			snaps = append(snaps, f)
		}
	}
	return lifecycle.Spec{
		ID: l.Handle, Launcher: r.launcher.path, Request: SpawnRequest(l),
		Workspace: l.Resolved.Workspace, Snapshots: snaps,
		Limits: profile.Of(l.Resolved.Identity.Profile), Cgroup: r.cgroups,
		Stdout: out, Stderr: errs, Cancel: cancel, OnEvent: onEvent,
	}
}
