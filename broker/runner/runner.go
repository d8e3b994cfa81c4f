package runner

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"warrant/broker/internal/egress"
	"warrant/broker/internal/identity"
	"warrant/broker/lifecycle"
	"warrant/internal/envpolicy"
	"warrant/internal/profile"
	"warrant/receipt"
	"warrant/wire"
)

// projectChars bounds each stream's agent-facing projection.
const projectChars = 32 << 10

// Executor launches actions once they are checkpointed. Runner is the
// real one; tests use doubles that start nothing.
type Executor interface {
	// Start launches l. It takes ownership of l's descriptors. A nil
	// error means the executor now owns the action and will tell obs
	// everything it observes, ending with exactly one obs.End. An error
	// means nothing was started and obs is never called; the broker then
	// records the outcome known_not_executed with the error (a
	// *wire.Error keeps its code).
	Start(ctx context.Context, l *Launch, obs Observer) error
	// Cancel asks the executor to end an action it owns.
	Cancel(handle, reason string) wire.CancelResult
}

// Launch is one checkpointed action, handed to the Executor: its use is
// already consumed and its EXECUTING record committed, durably once
// Durable returns nil.
type Launch struct {
	Handle         string
	Resolved       *identity.Resolved
	Snapshot       *os.File // sealed snapshot of the executable; nil where unbound (macOS)
	InterpSnapshot *os.File // of the interpreter of a "#!" script, or nil
	Home, Tmp      string   // the action's private directories, created 0700
	MACKey         []byte   // the broker's output HMAC key, for the stream recorders
	// ProbeLimits is set by the capability probe alone, for its limit
	// checks: the profile's bundle with small memory and process-count
	// figures, so that each limit is shown binding without gigabytes.
	// Agents' actions never have it: their limits are their profile's.
	ProbeLimits *profile.Limits
	// Durable, if set, returns once the EXECUTING record is durable, or
	// says why it is not (lifecycle.Spec.Durable): the launcher confines
	// itself meanwhile and executes only after it returned nil.
	Durable func() error
	// Protect lists the protected entries the launcher binds read-only
	// (or pins) in a private mount namespace, where this runner's
	// launchers can make one (Runner.Protection).
	Protect []wire.ProtectBind
	// Egress is the broker's proxy, for an identity with an egress grant
	// (Lease names the lease that carries it): the target is given its
	// port and the variables that name it, and the action a session of
	// its own. An identity with a grant and no proxy is refused, nothing
	// run (lifecycle.Spec.Egress).
	Egress *egress.Proxy
	Lease  string
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

// Observer is told what the executor observes of one action it owns: its
// first process's origin before that process is sent Proceed (an
// error ends the launch with nothing run), events as they happen
// (STARTED, TERM_SENT, KILL_SENT), then exactly one End. The broker
// implements it; the executor knows nothing of the journal or of
// receipts.
type Observer interface {
	Launched(o lifecycle.Origin) error
	Event(e lifecycle.Event)
	End(o *Observation)
}

// Observation is everything the executor observed of one action.
type Observation struct {
	Result  *wire.Result        // what the agent is told
	Run     *lifecycle.Result   // every fact the lifecycle observed
	Events  []lifecycle.Event   // in the order they happened
	Streams []*receipt.Captured // stdout and stderr evidence; nil when nothing started
	// BoundBy says what bound an in-place launch's bytes ("read-lease",
	// "unwritable", "script-read-by-path", or "none").
	BoundBy string
	// WitnessFailed says why an in-place launch's files were not their
	// approved selves after the run ("" when they were, or for a sealed
	// snapshot): its binding is broken.
	WitnessFailed string
}

// Survivor is what was found of an earlier action that outlived the
// broker which started it: processes still inside the action's cgroups,
// or in the process group of its recorded origin.
type Survivor struct {
	Handle       string
	Detail       string   // what was found and what became of it, in one sentence
	Pids         []int    // the processes found (when not Ended, those left)
	Commands     []string // each one's command line as found
	Where        string   // the action's cgroup directories, or its process group
	IdentifiedBy string   // what proved them its own (receipt.IdentifiedBy…)
	How          string   // how they were ended; "" when they were only reported
	Ended        bool     // every one was killed and none was then seen left
}

// Runner is the Executor: the pinned launcher, lifecycle supervision and
// output recording.
type Runner struct {
	launcher *pinned
	cgroups  *lifecycle.Cgroups // nil: supervision by process group alone
	warm     *lifecycle.Warm    // nil: every launcher started for its action
	limits   lifecycle.Enforcement
	rules    *receipt.Ruleset
	// noMountNS says why no launcher can make a mount namespace; "":
	// the protected paths are bound read-only.
	noMountNS string
	live      func(handle string, stream receipt.StreamName, redacted []byte)
	hints     bool // launches observe write-intent opens (Options.WriteHints)

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
	// Warm keeps a launcher started ahead of the next action
	// (lifecycle.Warm): for a daemon, which runs many; a broker that runs
	// one action would start one for nothing.
	Warm bool
	// Live, if set, receives each stream's redacted output as it is
	// released (for `broker run` in the foreground). It must not keep the
	// slice.
	Live func(handle string, stream receipt.StreamName, redacted []byte)
	// WriteHints turns on the observer of write-intent opens on Linux
	// (wire.SpawnRequest.ObserveWrites): a write Landlock refuses is
	// then recorded as a hint, and each such open costs a round trip to
	// the broker (a build that writes many files is measurably slower:
	// BenchmarkWriteHintObserver), which is why it is off by default.
	WriteHints bool
}

// New pins the launcher, makes this process the subreaper of its
// descendants and sets up this broker's cgroups (lifecycle.DetectCgroups).
// Logf, when not nil, is told why cgroups, or a limit, are not used.
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
	r := &Runner{launcher: l, rules: rules, live: o.Live, hints: runtime.GOOS == "linux" && o.WriteHints,
		running: map[string]chan struct{}{}}
	if cg, err := lifecycle.DetectCgroups(o.Scope); err == nil {
		r.cgroups, r.limits = cg, cg.Enforcement()
	} else {
		r.limits.Missing = fmt.Sprintf("No cgroup is writable by this broker (%v). To get the limits, give it a cgroup v2 subtree with the memory and pids controllers delegated: %s.",
			err, lifecycle.Delegate)
		if logf != nil {
			logf("no per-action cgroup (%v); supervising by process group", err)
		}
	}
	if r.limits.Missing != "" && logf != nil {
		logf("resource limits: %s", r.limits.Missing)
	}
	if r.noMountNS = lifecycle.Namespaces(l.path); r.noMountNS != "" && logf != nil {
		logf("protected paths are recorded, not bound read-only: %s", r.noMountNS)
	}
	if o.Warm {
		if r.warm, err = lifecycle.NewWarm(l.path, r.cgroups); err != nil && logf != nil {
			logf("no launcher started ahead (%v); each is started for its action", err)
		}
	}
	return r, nil
}

// Protection says how this runner's actions' protected paths are
// guarded (wire.ProtectedByMount or wire.ProtectedByDetect), and, for
// detect, why no mount namespace can be had.
func (r *Runner) Protection() (by, why string) {
	if r.noMountNS != "" {
		return wire.ProtectedByDetect, r.noMountNS
	}
	return wire.ProtectedByMount, ""
}

// Limits is how this broker's actions get their memory and process-count
// limits: what enforces each, or why nothing does.
func (r *Runner) Limits() lifecycle.Enforcement { return r.limits }

// Survivors ends the processes of earlier actions that outlived a
// previous broker on this state directory (their outcome is already
// unknown, and stays so): those still inside the action's cgroups, which
// proves they are its own, and, for each action of origins (the actions
// just found in flight, by their recorded first process) not found so,
// those of its process group while its first process is provably still
// the one recorded (lifecycle.EndOrigin). It returns what it found and
// did; processes it could not end, or could not prove the action's, are
// listed with how to end them by hand.
func (r *Runner) Survivors(origins map[string]lifecycle.Origin) ([]Survivor, error) {
	var left []lifecycle.Leftover
	var err error
	if r.cgroups != nil {
		left, err = r.cgroups.EndLeftovers()
	}
	handles := make([]string, 0, len(origins))
	for h := range origins {
		if !slices.ContainsFunc(left, func(l lifecycle.Leftover) bool { return l.ID == h }) {
			handles = append(handles, h)
		}
	}
	slices.Sort(handles)
	for _, h := range handles {
		if l, found := lifecycle.EndOrigin(h, origins[h]); found {
			left = append(left, l)
		}
	}
	out := make([]Survivor, 0, len(left))
	for _, l := range left {
		out = append(out, survivor(l))
	}
	if err != nil {
		return out, fmt.Errorf("look for processes left by a previous broker: %w", err)
	}
	return out, nil
}

// survivor is l with its one-sentence account.
func survivor(l lifecycle.Leftover) Survivor {
	s := Survivor{Handle: l.ID, Pids: l.Pids, Commands: l.Commands, Where: l.Where, IdentifiedBy: l.IdentifiedBy, How: l.How, Ended: l.Ended}
	pids := strings.Trim(fmt.Sprint(l.Pids), "[]")
	switch {
	case l.IdentifiedBy == receipt.IdentifiedByNone:
		s.Detail = fmt.Sprintf("processes %v (%s) are still running in %s, the process group of this action's first process, which is gone: nothing proves they are this action's, so they were not ended; if they are, end them by hand (kill -KILL %s)",
			l.Pids, strings.Join(l.Commands, "; "), l.Where, pids)
	case l.Ended:
		s.Detail = fmt.Sprintf("processes %v of this action (%s) outlived the broker that started it; they were still in %s and were ended by %s",
			l.Pids, strings.Join(l.Commands, "; "), l.Where, l.How)
	default:
		s.Detail = fmt.Sprintf("processes %v of this action outlived the broker that started it and are still running in %s after %s was tried; end them by hand (kill -KILL %s)",
			l.Pids, l.Where, l.How, pids)
	}
	return s
}

// LauncherDigest is the SHA-256 of the pinned launcher, hex encoded.
func (r *Runner) LauncherDigest() string { return hex.EncodeToString(r.launcher.sum[:]) }

// Cgroups describes the cgroup directories actions run in, or "".
func (r *Runner) Cgroups() string {
	if r.cgroups == nil {
		return ""
	}
	return r.cgroups.Describe()
}

// CgroupDirs lists the cgroup directories actions run in (those Cgroups
// describes), or nil.
func (r *Runner) CgroupDirs() []string {
	if r.cgroups == nil {
		return nil
	}
	return r.cgroups.Dirs()
}

// Close waits for every action in flight to end, then releases the pinned
// launcher.
func (r *Runner) Close() {
	r.wg.Wait()
	r.warm.Close()
	r.launcher.close()
	if r.cgroups != nil {
		r.cgroups.Remove()
	}
}

// Start launches l in the background. It owns l from here on.
func (r *Runner) Start(_ context.Context, l *Launch, obs Observer) error {
	cancel := make(chan struct{})
	r.mu.Lock()
	r.running[l.Handle] = cancel
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer l.Close()
		r.run(l, obs, cancel)
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
func SpawnRequest(l *Launch) *wire.SpawnRequest {
	id := l.Resolved.Identity()
	env := append([]wire.EnvVar{{Name: "HOME", Value: l.Home}, {Name: "TMPDIR", Value: l.Tmp}}, id.Env...)
	port := egressPort(l)
	env = append(env, envpolicy.ProxyEnv(port)...)
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return &wire.SpawnRequest{
		Protocol:    wire.SpawnProtocol,
		Argv:        append([]string{id.Executable.Requested}, id.Argv...),
		Env:         env,
		Workspace:   id.Workspace,
		Cwd:         id.Cwd,
		Executable:  id.Executable.File,
		Interpreter: id.Executable.Interpreter,
		Snapshots:   l.Snapshot != nil,
		Binding:     bindingOf(id),
		Profile:     id.Profile,
		Policy:      id.Policy,
		Home:        l.Home,
		Tmp:         l.Tmp,
		EgressPort:  port,
	}
}

// egressPort is the port of the proxy an action with an egress grant
// reaches, or 0: none without a grant, or without a proxy (which
// lifecycle.Run then refuses).
func egressPort(l *Launch) uint16 {
	if l.Egress == nil || len(l.Resolved.Identity().Egress) == 0 {
		return 0
	}
	return l.Egress.Addr().Port()
}

// bindingOf is the binding an identity asks for; an identity from before
// bindings were chosen is the sealed snapshot it was approved for.
func bindingOf(id *wire.CommandIdentity) wire.Binding {
	if id.Binding == 0 {
		return wire.SealedSnapshot
	}
	return id.Binding
}

// spec is the lifecycle launch of l.
func (r *Runner) spec(l *Launch, out, errs io.Writer, cancel <-chan struct{}, onEvent func(lifecycle.Event), onLaunch func(lifecycle.Origin) error) lifecycle.Spec {
	var snaps []*os.File
	for _, f := range []*os.File{l.Snapshot, l.InterpSnapshot} {
		if f != nil {
			snaps = append(snaps, f)
		}
	}
	lim := profile.Of(l.Resolved.Identity().Profile)
	if l.ProbeLimits != nil {
		lim = *l.ProbeLimits
	}
	req := SpawnRequest(l)
	if r.noMountNS == "" {
		req.Protect = l.Protect
	}
	req.ObserveWrites, req.AuditDenials = r.hints, lifecycle.AuditDenials()
	return lifecycle.Spec{
		ID: l.Handle, Launcher: r.launcher.path, Request: req,
		Workspace: l.Resolved.Workspace(), Snapshots: snaps,
		Limits: lim, Cgroup: r.cgroups, Warm: r.warm,
		Stdout: out, Stderr: errs, Cancel: cancel, OnEvent: onEvent, OnLaunch: onLaunch, Durable: l.Durable,
		Egress: lifecycle.Egress{Granted: l.Resolved.Identity().Egress, Proxy: l.Egress, Lease: l.Lease},
	}
}
