package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"warrant/broker/internal/actiondirs"
	"warrant/broker/internal/admission"
	"warrant/broker/internal/caches"
	"warrant/broker/internal/egress"
	"warrant/broker/internal/follow"
	"warrant/broker/internal/journal"
	"warrant/broker/internal/policy"
	"warrant/broker/internal/probe"
	"warrant/broker/internal/seam"
	"warrant/broker/internal/snapcache"
	"warrant/broker/internal/statedir"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/receipt"
	"warrant/wire"
)

// Config configures a broker.
type Config struct {
	StateDir       string               // see the state directory layout in doc.go
	ExtraReadPaths []string             // operator-configured read+execute paths added to every policy
	Environ        []string             // the broker's environment; only LANG, LC_* and TZ are taken from it
	Executor       runner.Executor      // launches checkpointed actions; nil: execution is refused
	Now            func() time.Time     // the clock; time.Now when nil
	Logf           func(string, ...any) // diagnostics; discarded when nil

	// Env are the operator's declared variables, NAME=VALUE (`--env`),
	// added to every target's environment after those of <state>/env
	// (admission.DeclaredEnv); a refused name stops Open.
	Env []string
	// CargoTargetCache points CARGO_TARGET_DIR into each workspace's
	// cache (`--cargo-target-cache`).
	CargoTargetCache bool

	// Binaries are the running broker's executable and the launcher's:
	// no workspace may be, contain or lie inside their directories.
	Binaries []string

	// ProbeTarget is the capability probe's program and its leading
	// arguments (internal/probeprog); the broker appends the plan. Empty:
	// the broker cannot probe and stays unverified.
	ProbeTarget []string
	// Reprobe runs the probe at Open even when a verified stored report
	// matches this host (`broker probe`).
	Reprobe bool

	// Witness is a directory outside the state directory to which every
	// signed checkpoint is copied (`serve --witness`,
	// broker/internal/witness); "": none.
	Witness string

	// Output is where the Executor's live output is published
	// (runner.Options.Live → Output.Publish), for the agent socket's
	// Follow; a new, empty hub when nil. Open gives it <state>/output
	// for its spills, removing what a previous broker left there, and
	// Close removes them.
	Output *follow.Hub

	// Lock is the state directory's lock, taken with LockState before
	// anything shared with another broker of the directory was made (the
	// runner's cgroups). Open uses it and Close leaves it to its taker.
	// Nil: Open takes the lock itself, and Close releases it.
	Lock *StateLock

	// Socket limits; defaults when zero.
	MaxConns    int           // concurrent connections per socket (64)
	IdleTimeout time.Duration // a connection must complete its next frame within this (30s)
}

// Broker decides whether actions may run: admission, identity, approvals,
// leases, goals and the journal; and turns what the executor observed
// into evidence.
type Broker struct {
	cfg   Config
	dirs  statedir.Dirs
	lock  *StateLock
	owned bool // Open took lock, and Close releases it
	j     *journal.Journal
	snaps *snapcache.Cache
	adirs *actiondirs.Dirs // actions' private directories
	rlog  *receiptLog
	seams []string // test seams in force (broker/internal/seam); nil in production
	// admit is what a request's resolution uses, all decided at Open:
	// the broker's authority, base policy and environment, the caches,
	// the operator's declared variables, bindings and git identity.
	admit *admission.Resolver
	// opened is when Open ran: the origin of the receipts' monotonic clock.
	opened time.Time
	// recovered are the actions Open found in flight and made unknown.
	recovered []string

	// egress is the broker's one egress proxy, listening from the first
	// action with an egress grant until Close.
	egress struct {
		sync.Mutex
		proxy *egress.Proxy
	}

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced whenever an action or approval request changes state
	capability *probe.Report // decided at Open; submits are refused unless verified
	prober     probe.Prober  // the configured Executor, when it can run the probe
	limiter    limiter       // the configured Executor, when it applies cgroup limits
}

// Open prepares the state directory, takes its lock (one broker per state
// directory) unless cfg.Lock holds it already, opens the journal, marks
// every action a previous broker left in flight as unknown (and journals
// any of their processes that are still running), and decides the
// capability state.
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
	if cfg.Output == nil {
		cfg.Output = follow.New()
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	// The real chain the probe runs through and that finds survivors, even
	// when a seam replaces the executor.
	prober, _ := cfg.Executor.(probe.Prober)
	finder, _ := cfg.Executor.(survivorFinder)
	limits, _ := cfg.Executor.(limiter)
	configured := cfg.ExtraReadPaths // the operator's, before any test seam's
	active := applySeams(&cfg)
	base, err := policy.Base(cfg.ExtraReadPaths)
	if err != nil {
		return nil, fmt.Errorf("open broker: %w", err)
	}
	lock, owned := cfg.Lock, cfg.Lock == nil
	if owned {
		if lock, err = LockState(cfg.StateDir); err != nil {
			return nil, fmt.Errorf("open broker: %w", err)
		}
	}
	release := func() {
		if owned {
			lock.Release()
		}
	}
	dirs := lock.Dirs()
	if abs, _ := filepath.Abs(cfg.StateDir); abs != dirs.Root {
		panic(fmt.Sprintf("broker: internal error: Open of %s given the lock of %s", cfg.StateDir, dirs.Root))
	}
	if err := policy.CheckReadPaths(configured, policy.HomeDir(), dirs.Root); err != nil {
		release()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	// Before any action runs: what a previous broker spilled goes.
	if err := cfg.Output.SpillTo(dirs.Output); err != nil {
		release()
		return nil, fmt.Errorf("open broker: prepare the output spills: %w", err)
	}
	git, why := admission.GitIdentity(cfg.Environ)
	if why != "" {
		cfg.Logf("no git identity for actions: %s", why)
	}
	declared, err := admission.DeclaredEnv(dirs.Env, cfg.Env)
	var sealed map[string]bool
	if err == nil {
		sealed, err = admission.ReadBindings(dirs.Bindings)
	}
	var presets map[string][]string
	if err == nil {
		presets, err = egress.ReadPresets(dirs.Egress)
	}
	var store *caches.Store
	if err == nil {
		store, err = caches.Open(dirs.Caches, cfg.CargoTargetCache, cfg.Now)
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	protected, withheld, err := admission.Authority(dirs, cfg.Binaries, cfg.ExtraReadPaths)
	if err != nil {
		release()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	j, err := journal.Open(ctx, dirs.Journal, cfg.Now)
	if err != nil {
		protected.Close()
		release()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	if slices.Contains(active, seam.Crashtest) {
		j.SetCrashPoints(seam.CrashPoint)
	}
	admit := &admission.Resolver{Protected: protected, Withheld: withheld, Base: base, Env: admission.ActionEnv(cfg.Environ, declared),
		Declared: declared, Environ: cfg.Environ, Caches: store, Toolchains: admission.ToolchainHost(declared), Sealed: sealed, Git: git,
		Presets: presets, Logf: cfg.Logf}
	b := &Broker{cfg: cfg, dirs: dirs, lock: lock, owned: owned, j: j, admit: admit, changed: make(chan struct{}), prober: prober, limiter: limits,
		snaps: snapcache.New(64, 1<<30), seams: active, opened: cfg.Now(), adirs: actiondirs.Open(dirs.Actions, cfg.Logf)}
	keys, err := statedir.LoadKeys(dirs)
	if err == nil {
		b.rlog, err = openReceiptLog(ctx, j, keys)
	}
	if err == nil && cfg.Witness != "" {
		b.rlog.witness, err = b.openWitness(ctx)
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
	b.recovered = unknown
	for _, h := range unknown {
		cfg.Logf("action %s was in flight when the previous broker stopped; its outcome is unknown and it will not be re-run", h)
	}
	b.journalSurvivors(ctx, finder, unknown)
	if _, err := b.EnsureCapability(ctx, cfg.Reprobe); err != nil {
		b.Close()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	return b, nil
}

// Recovered returns the handles of the actions that Open found in flight,
// left by a previous broker, and recorded as unknown: the next broker on
// the state directory finds none of them in flight, so each is reported
// once.
func (b *Broker) Recovered() []string { return slices.Clone(b.recovered) }

// applySeams applies every test seam in force (broker/internal/seam) —
// none in a production build — and warns about them. It returns their
// names, which the capability report records.
func applySeams(cfg *Config) []string {
	active := seam.Active()
	if len(active) == 0 {
		return nil
	}
	cfg.Logf("WARNING: test seams are in force (%s); this broker is for tests only", strings.Join(active, ", "))
	if x := seam.CrashExecutor(cfg.StateDir); x != nil {
		cfg.Executor = x
	}
	if extra := seam.ExtraReadPaths(cfg.StateDir); extra != nil {
		cfg.ExtraReadPaths = append(slices.Clone(cfg.ExtraReadPaths), extra...)
	}
	return active
}

// survivorFinder is an Executor that can find the processes of earlier
// actions that outlived a previous broker (runner.Runner).
type survivorFinder interface {
	Survivors(origins map[string]lifecycle.Origin) ([]runner.Survivor, error)
}

// journalSurvivors ends the processes of earlier actions (their outcome
// already unknown, and staying so) that are provably their own: still
// inside the actions' cgroups, or, for the actions just found in flight
// (unknown), in the process group of their recorded origin while its
// first process is still the one recorded. It records what was found and
// done: in the log, as a SURVIVORS event in each action's journal, and as
// a signed survivors record in the receipt chain naming the action's
// unknown receipt. Processes it could not end, or not prove the action's,
// are reported with their pids, command lines and how to end them.
func (b *Broker) journalSurvivors(ctx context.Context, f survivorFinder, unknown []string) {
	if f == nil {
		return
	}
	recorded, err := b.j.Origins(ctx, unknown)
	if err != nil {
		b.cfg.Logf("%v; survivors are looked for only in the actions' cgroups", err)
	}
	origins := make(map[string]lifecycle.Origin, len(recorded))
	for h, o := range recorded {
		origins[h] = lifecycle.Origin(o)
	}
	left, err := f.Survivors(origins)
	if err != nil {
		b.cfg.Logf("%v", err)
	}
	for _, s := range left {
		b.cfg.Logf("action %s: %s", s.Handle, s.Detail)
		if err := b.j.RecordEvent(ctx, s.Handle, "SURVIVORS", s.Detail); err != nil {
			b.cfg.Logf("action %s: journal its survivors: %v", s.Handle, err)
		}
		if err := b.recordSurvivors(ctx, s); err != nil {
			b.cfg.Logf("action %s: record its survivors in the receipt log: %v", s.Handle, err)
		}
	}
}

// recordSurvivors appends the survivors record of s to the receipt chain.
func (b *Broker) recordSurvivors(ctx context.Context, s runner.Survivor) error {
	rec := receipt.Survivors{Action: s.Handle, At: b.Stamp(b.cfg.Now()), FoundIn: s.Where, IdentifiedBy: s.IdentifiedBy, EndedBy: s.How, Gone: s.Ended}
	for i, pid := range s.Pids {
		p := receipt.Survivor{Pid: int64(pid)}
		if i < len(s.Commands) {
			p.Command = s.Commands[i]
		}
		rec.Processes = append(rec.Processes, p)
	}
	return b.appendLog(ctx, func(tx *journal.LogTx, c *receipt.Chain) (bool, error) {
		entries, err := tx.Entries()
		if err != nil {
			return false, err
		}
		e, err := c.EndedSurvivors(entries, rec)
		if err != nil {
			return false, err
		}
		return true, tx.AppendEntry(e, "", "")
	})
}

// withEgress gives l, an action admitted under lease, the broker's
// egress proxy when its identity has an egress grant: the proxy listens
// at the first such action. A proxy that cannot listen, or a host the
// probe did not show to enforce egress leases (checkEgress), refuses the
// action before anything is consumed or run (SANDBOX_UNAVAILABLE).
func (b *Broker) withEgress(l *runner.Launch, lease string) error {
	if len(l.Resolved.Identity().Egress) == 0 {
		return nil
	}
	if err := b.checkEgress(); err != nil {
		return err // a lease granted before this host was found to lack egress
	}
	b.egress.Lock()
	defer b.egress.Unlock()
	if b.egress.proxy == nil {
		p, err := egress.Listen()
		if err != nil {
			return wire.Errorf(wire.CodeSandboxUnavailable, "the action has an egress grant, and the broker's egress proxy could not listen, so it was not run: %v", err)
		}
		b.egress.proxy = p
	}
	l.Egress, l.Lease = b.egress.proxy, lease
	return nil
}

// Close closes the journal, drops cached snapshots, closes the protected
// places and the egress proxy, and releases the lock if Open took it.
// The executor's actions are over by then (runner.Runner.Close).
func (b *Broker) Close() error {
	if b.rlog != nil {
		b.rlog.witness.Close()
	}
	b.egress.Lock()
	if b.egress.proxy != nil {
		if err := b.egress.proxy.Close(); err != nil {
			b.cfg.Logf("close the egress proxy: %v", err)
		}
		b.egress.proxy = nil
	}
	b.egress.Unlock()
	b.snaps.Close()
	b.adirs.Close()
	b.cfg.Output.Close() // no spill outlives its broker
	err := b.j.Close()
	b.admit.Protected.Close()
	if b.owned {
		b.lock.Release()
	}
	return err
}

// Journal returns the broker's journal.
func (b *Broker) Journal() *journal.Journal { return b.j }

// notify wakes every waiter: an action changed state.
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

// await calls check now, after every change and once more when budget
// runs out (what changes with time alone is seen then), until it reports
// done; it reports false if budget runs out first.
func (b *Broker) await(ctx context.Context, budget time.Duration, check func() (bool, error)) (bool, error) {
	timer := time.NewTimer(budget)
	defer timer.Stop()
	for {
		changed := b.changes()
		if done, err := check(); done || err != nil {
			return done, err
		}
		select {
		case <-changed:
		case <-timer.C:
			return check()
		case <-ctx.Done():
			return false, wire.Errorf(wire.CodeIOFailed, "the broker is shutting down")
		}
	}
}

// removeActionDirs removes an action's private HOME and TMPDIR, with
// whatever its target left there, once its outcome is known and before it
// is recorded. Every outcome but unknown is decided before anything ran or
// on evidence that the whole group is gone, so nothing can still use them.
// An unknown action's directories are kept: a survivor may still be
// working in them, and they are evidence for the operator who resolves it.
// Removal does not follow symlinks the target planted (os.RemoveAll works
// by directory descriptor); a failure is logged and leaves the directory
// behind. The deletion itself is in the background
// (broker/internal/actiondirs), started
// by the call returned, which the caller makes once the end is recorded.
func (b *Broker) removeActionDirs(handle string) (later func()) {
	later, err := b.adirs.Remove(handle)
	if err != nil {
		b.cfg.Logf("action %s: remove its private directories: %v", handle, err)
	}
	return later
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
