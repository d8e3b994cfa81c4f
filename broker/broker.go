package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"warrant/internal/envpolicy"
	"warrant/wire"
)

// Config configures a broker.
type Config struct {
	StateDir       string               // see StateDir layout in doc.go
	ExtraReadPaths []string             // operator-configured read+execute paths added to every policy
	Environ        []string             // the broker's environment; only LANG, LC_* and TZ are taken from it
	Executor       Executor             // launches checkpointed actions; nil: execution is refused
	Now            func() time.Time     // the clock; time.Now when nil
	Logf           func(string, ...any) // diagnostics; discarded when nil

	// ProbeTarget is the capability probe's program and its leading
	// arguments (internal/probeprog); the broker appends the plan. Empty:
	// the broker cannot probe and stays unverified.
	ProbeTarget []string
	// Reprobe runs the probe at Open even when a verified stored report
	// matches this host (`broker probe`).
	Reprobe bool
	// InsecureSkipProbeForTests marks the capability verified without a
	// probe, for tests whose Executor is a double that starts nothing. It
	// panics outside a test binary (testing.Testing). Nothing is unconfined
	// by it: it can only skip the check, never the launcher.
	InsecureSkipProbeForTests bool

	// Socket limits; defaults when zero.
	MaxConns    int           // concurrent connections per socket (64)
	IdleTimeout time.Duration // a connection must complete its next frame within this (30s)
}

// Executor launches actions once they are checkpointed. The lifecycle
// (launcher, supervision, output, receipts) implements it; the broker
// itself never executes anything.
type Executor interface {
	// Start launches l. It takes ownership of l's descriptors. A nil error
	// means the executor now owns the action and records how it ends
	// through Broker.MarkRunning and Broker.Finish. An error means nothing
	// was started; the broker then records the outcome known_not_executed
	// with the error (a *wire.Error keeps its code).
	Start(ctx context.Context, l *Launch) error
	// Cancel asks the executor to end an action it owns.
	Cancel(handle, reason string) wire.CancelResult
}

// Launch is one checkpointed action, handed to the Executor: its use is
// already consumed and its EXECUTING record committed.
type Launch struct {
	Handle         string
	Goal           Goal
	Session        string
	Resolved       *Resolved
	Snapshot       *os.File // sealed snapshot of the executable; nil where unbound (macOS)
	InterpSnapshot *os.File // of the interpreter of a "#!" script, or nil
	Home, Tmp      string   // the action's private directories, created 0700
}

// Close releases every descriptor of l.
func (l *Launch) Close() {
	l.Resolved.Close()
	for _, f := range []*os.File{l.Snapshot, l.InterpSnapshot} {
		if f != nil {
			f.Close()
		}
	}
}

// Broker decides whether actions may run: admission, identity, approvals,
// leases, goals and the journal.
type Broker struct {
	cfg   Config
	dirs  stateDirs
	lock  *os.File
	j     *Journal
	snaps *SnapCache
	base  wire.Policy
	env   []wire.EnvVar
	rlog  *receiptLog
	// opened is when Open ran: the origin of the receipts' monotonic clock.
	opened time.Time

	mu         sync.Mutex
	changed    chan struct{}     // closed and replaced whenever an action changes state
	capability *CapabilityReport // decided at Open; submits are refused unless verified
	prober     Prober            // the configured Executor, when it can run the probe
}

// Open prepares the state directory, takes its lock (one broker per state
// directory), opens the journal, and marks every action a previous broker
// left in flight as unknown.
func Open(ctx context.Context, cfg Config) (*Broker, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 64
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	prober, _ := cfg.Executor.(Prober) // the real chain the probe runs through, even when a crashtest executor replaces it
	if crashtestExecutor != nil {
		cfg.Executor = crashtestExecutor(cfg.StateDir) // only in -tags warrant_crashtest builds
	}
	extras := cfg.ExtraReadPaths
	if insecureProbeTestReadPaths != nil {
		extras = append(slices.Clone(extras), insecureProbeTestReadPaths(cfg.StateDir)...) // only in -tags warrant_insecure_probe_test builds
	}
	base, err := basePolicy(extras)
	if err != nil {
		return nil, fmt.Errorf("open broker: %w", err)
	}
	dirs, err := prepareStateDir(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("open broker: %w", err)
	}
	lock, err := lockStateDir(dirs)
	if err != nil {
		return nil, fmt.Errorf("open broker: %w", err)
	}
	j, err := OpenJournal(ctx, dirs.journal, cfg.Now)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	b := &Broker{cfg: cfg, dirs: dirs, lock: lock, j: j, base: base, changed: make(chan struct{}), prober: prober,
		snaps: NewSnapCache(64, 1<<30), env: actionEnv(cfg.Environ), opened: cfg.Now()}
	keys, err := loadKeys(dirs)
	if err == nil {
		b.rlog, err = openReceiptLog(ctx, j, keys)
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	unknown, err := j.RecoverInterrupted(ctx)
	if err == nil {
		err = b.sealUnknownReceipts(ctx)
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	for _, h := range unknown {
		cfg.Logf("action %s was in flight when the previous broker stopped; its outcome is unknown and it will not be re-run", h)
	}
	if _, err := b.EnsureCapability(ctx, cfg.Reprobe); err != nil {
		b.Close()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	return b, nil
}

// actionEnv is the identity's environment: the allowlist built from the
// broker's environment, without HOME and TMPDIR, which are per action.
func actionEnv(environ []string) []wire.EnvVar {
	var env []wire.EnvVar
	for _, kv := range envpolicy.Build(environ, "/", "/") {
		if kv.Name != "HOME" && kv.Name != "TMPDIR" {
			env = append(env, kv)
		}
	}
	return env
}

// Close closes the journal, drops cached snapshots and releases the lock.
func (b *Broker) Close() error {
	b.snaps.Close()
	err := b.j.Close()
	b.lock.Close()
	return err
}

// Journal returns the broker's journal.
func (b *Broker) Journal() *Journal { return b.j }

// MarkRunning records that an action's process started.
func (b *Broker) MarkRunning(ctx context.Context, handle string) error {
	defer b.notify()
	return b.j.MarkRunning(ctx, handle)
}

// Finish records how an action ended and wakes its waiters.
func (b *Broker) Finish(ctx context.Context, handle string, r *wire.Result) error {
	defer b.notify()
	return b.j.Finish(ctx, handle, r)
}

func (b *Broker) notify() {
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

func (b *Broker) changes() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// actionDirs creates the private HOME and TMPDIR of an action.
func (b *Broker) actionDirs(handle string) (home, tmp string, err error) {
	dir := filepath.Join(b.dirs.actions, handle)
	home, tmp = filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{dir, home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return "", "", fmt.Errorf("create action directory: %w", err)
		}
	}
	return home, tmp, nil
}

// RemoveActionDirs removes an action's private HOME and TMPDIR, with
// whatever its target left there, once its outcome is known and before it
// is recorded. Every outcome but unknown is decided before anything ran or
// on evidence that the whole group is gone, so nothing can still use them.
// An unknown action's directories are kept: a survivor may still be
// working in them, and they are evidence for the operator who resolves it.
// Removal does not follow symlinks the target planted (os.RemoveAll works
// by directory descriptor); a failure is logged and leaves the directory
// behind.
func (b *Broker) RemoveActionDirs(handle string) {
	if err := os.RemoveAll(filepath.Join(b.dirs.actions, handle)); err != nil {
		b.cfg.Logf("action %s: remove its private directories: %v", handle, err)
	}
}

// asWireError turns any error into the *wire.Error a client receives.
// Uncoded errors are internal: logged in full, reported as INTERNAL.
func (b *Broker) asWireError(err error) *wire.Error {
	var we *wire.Error
	if errors.As(err, &we) {
		return we
	}
	b.cfg.Logf("internal error: %v", err)
	return wire.Errorf(wire.CodeInternal, "the broker failed internally: %v", err)
}
