package lifecycle

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"warrant/broker/internal/egress"
	"warrant/internal/profile"
	"warrant/receipt"
	"warrant/wire"
)

// Spec is one launch.
type Spec struct {
	ID        string             // the action id; names its cgroup
	Launcher  string             // absolute path of the pinned launcher binary
	Request   *wire.SpawnRequest // validated by the broker; re-checked by the launcher
	Workspace *os.File           // the verified workspace directory
	Snapshots []*os.File         // sealed memfds in SpawnRequest order, when Request.Snapshots
	Limits    profile.Limits     // Memory and Pids are applied where Cgroup enforces them
	Cgroup    *Cgroups           // nil when no cgroup hierarchy is writable
	Warm      *Warm              // the launcher started ahead, if any (nil: started for the action)
	Stdout    io.Writer          // receives every raw stdout byte, in order
	Stderr    io.Writer          // receives every raw stderr byte, in order
	Cancel    <-chan struct{}
	OnEvent   func(Event) // called synchronously as each fact is observed
	// OnLaunch, if set, is told the launcher's Origin once it is started
	// in the action's cgroups and sent its request, before it is sent
	// Proceed: until then it runs nothing of the target. An error ends
	// the launch, nothing run. It is not called where no Origin can be
	// read (macOS).
	OnLaunch func(Origin) error
	// Durable, if set, returns once the action's EXECUTING record is
	// durable, or says why it is not: the launcher confines itself and
	// replies Ready meanwhile, and is sent Proceed, the one message it
	// executes after, only once Durable returned nil. An error ends the
	// launch with nothing run. Nil sends Proceed as soon as Ready checks.
	Durable func() error
	// Egress is the action's egress grant: with one, Request.EgressPort
	// must name the proxy's port, and the action is given a session of
	// the proxy for the metadata server to admit its connects to (Linux);
	// anything else is refused before a launcher is started.
	Egress Egress
	// After, if set, is given the action's background work, each item a
	// call that only starts it (making the next warm launcher, removing
	// the action's cgroups), for the caller to make once it has recorded
	// the action's end: the work then competes with no part of the
	// action's own path. Nil makes each call at once.
	After func(start func())
}

// Egress is an action's egress grant (wire.CommandIdentity.Egress), the
// broker's proxy that serves it, and the lease that carries it (the
// proxy's refusals name it).
type Egress struct {
	Granted []string
	Proxy   *egress.Proxy
	Lease   string
}

// check refuses a request whose egress port is not its grant's proxy's,
// and a grant where this platform cannot confine connections to the
// proxy (noEgress): never a run without its proxy, nor a proxy port
// without a grant.
func (e *Egress) check(port uint16) error {
	switch {
	case len(e.Granted) == 0 && port != 0:
		return fmt.Errorf("the request names an egress proxy (port %d) but the action has no egress grant", port)
	case len(e.Granted) == 0:
		return nil
	case noEgress != "":
		return errors.New(noEgress)
	case e.Proxy == nil:
		return errors.New("the action has an egress grant but the broker has no proxy for it")
	case port != e.Proxy.Addr().Port():
		return fmt.Errorf("the request names port %d, not the egress proxy's %d", port, e.Proxy.Addr().Port())
	}
	return nil
}

// Origin identifies an action's first process (the launcher, which
// becomes the target by exec) beyond the life of the broker that started
// it: a pid alone is reused, but not the pid with the clock tick it
// started at within one boot.
type Origin struct {
	Pid   int
	Start uint64 // clock ticks after boot (proc_pid_stat(5) field 22)
	Boot  string // /proc/sys/kernel/random/boot_id
}

// Event is one observed transition and when it was observed (Wall carries
// Go's monotonic reading too, so events order exactly).
type Event struct {
	Kind   receipt.EventType // STARTED, TERM_SENT, KILL_SENT, TERMINATED or UNKNOWN_TERMINATION
	Wall   time.Time
	Detail string
}

// Result is everything observed about one launch.
type Result struct {
	Outcome wire.Outcome
	Err     *wire.Error   // the code and sentence of every outcome but exited and signaled
	Refused *wire.Refused // the launcher's refusal, when it refused
	Ready   *wire.Ready   // the launcher's measured facts, when it got that far
	Errno   uint32        // execveat's errno, for spawn_failed after Ready

	Pid     int
	Started time.Time // wall clock at STARTED

	RootExited bool      // the root's exit was observed
	RootExitAt time.Time // when: recorded apart from GoneAt, since the group may outlive the root
	ExitCode   *int      // set when the root exited normally
	Signal     int       // set when a signal ended the root
	GroupGone  bool      // the whole group was confirmed gone
	ByCgroup   bool      // confirmed by cgroup.events (else by /proc and kill(-pgid, 0) == ESRCH)
	GoneAt     time.Time // wall clock when it was confirmed
	Evidence   string    // how GroupGone was confirmed, or why it was not

	// LeaversUntracked says GroupGone cannot cover a descendant that left
	// the process group (macOS: no cgroups, and Seatbelt allows setsid).
	LeaversUntracked bool

	StreamsComplete bool // both streams were drained to EOF

	// Enforced is what applied the memory and process-count limits: the
	// action's cgroups were made with them before the launcher started.
	// The zero value (nothing) when no cgroup was made.
	Enforced Enforcement
	// Usage is what the action's cgroups counted, read at its end; nil
	// when it had none or nothing started.
	Usage *Usage

	// MetadataDone and MetadataRefused count the target's metadata calls
	// (chmod, chown, xattrs, times) the broker performed beneath the
	// writable scope and the ones it refused (Linux); MetadataCPU is the
	// CPU time the broker's answering thread spent on them, MetadataHeld
	// how long answers were held back by the action's budget.
	MetadataDone, MetadataRefused uint64
	MetadataCPU, MetadataHeld     time.Duration
	// Denials are the refusals the metadata server saw (Linux): the
	// broker's own and the seccomp filter's it counted; nil where nothing
	// watched the target.
	Denials *wire.Denials
	// Egress is what an action with an egress grant asked the proxy
	// for, once its session was closed; nil without a grant, or when no
	// session was opened.
	Egress *wire.Egress
}

// Leftover is what was found running of an action whose outcome is
// unknown after the broker that started it died: an action cgroup still
// holding processes (EndLeftovers), or its process group (EndOrigin)
// (Linux only).
type Leftover struct {
	ID       string   // the action's handle
	Pids     []int    // the processes found in its cgroups; when Ended is false, those left
	Commands []string // the command line of each of Pids as found, "" where unreadable
	Where    string   // its cgroup directories, or its process group
	How      string   // how they were ended; "" when they were not
	Ended    bool     // every process was killed and none was then seen left
	// IdentifiedBy is what proved them the action's own (receipt's
	// IdentifiedByCgroup or IdentifiedByPidStart), or IdentifiedByNone:
	// they were only reported.
	IdentifiedBy string
}

// reason records why the broker ended a group itself.
type reason uint8

const (
	reasonNone reason = iota
	reasonTimeout
	reasonCancel
	reasonOutputLimit
)

// decide returns the outcome and error for the observed facts.
func decide(r *Result, why reason, wall time.Duration) {
	if !r.GroupGone || !r.RootExited || !r.StreamsComplete {
		r.Outcome = wire.OutcomeUnknown
		r.Err = wire.Errorf(wire.CodeUnknownOutcome, "the end of the action could not be confirmed: %s", r.Evidence)
		return
	}
	switch why {
	case reasonTimeout:
		r.Outcome = wire.TimedOutReaped
		r.Err = wire.Errorf(wire.CodeTimeout, "the action exceeded its wall-time limit of %s and its group was ended", wall)
	case reasonCancel:
		r.Outcome = wire.CancelledReaped
		r.Err = wire.Errorf(wire.CodeCancelled, "the action was cancelled and its group was ended")
	case reasonOutputLimit:
		r.Outcome = wire.OutputLimitReaped
		r.Err = wire.Errorf(wire.CodeOutputLimit, "the action exceeded its hard output budget and its group was ended")
	default:
		if r.ExitCode != nil {
			r.Outcome = wire.Exited
		} else {
			r.Outcome = wire.Signaled
		}
	}
}
