// Package runner is the broker's Executor: it turns a checkpointed action
// into one launch of the pinned launcher, supervises it with
// broker/lifecycle, and records both output streams with receipt.Recorder
// (streaming redaction, exact counters, head and tail). It reports what it
// observes to the action's Observer — each lifecycle event as it happens,
// then one Observation — and knows nothing of the journal: the broker
// journals the events, builds and seals the receipt, and records the
// result (broker/evidence.go). Data flows one way, from the executor to
// the evidence; the runner holds no reference to the broker.
//
// The result it reports carries what the sandbox was seen to refuse
// (wire.Result.Denials, from the metadata server by way of the
// lifecycle) and, for an action with an egress grant, what it connected
// to through the broker's proxy (wire.Result.Egress, from its session),
// for a started action only; the broker seals the same into the receipt.
//
// # Egress
//
// An identity with an egress grant is launched with the broker's proxy
// (Launch.Egress, given by the broker): its SpawnRequest names the
// proxy's port (EgressPort, the one TCP port the launcher's Landlock
// rules let it connect to) and its environment carries exactly
// envpolicy.ProxyEnv of that port, which is what the launcher checks.
// Without a grant the request is exactly what it was before egress
// existed, whatever proxy the broker has.
//
// # The launcher is pinned
//
// New opens the launcher binary once, at broker start, copies it into a
// sealed memfd (internal/snapshot) and records its SHA-256. Every launch
// executes that snapshot through /proc/self/fd, so replacing or rewriting
// the file on disk afterwards changes nothing the broker runs.
//
// # Order of reports
//
// STARTED is reported when Ready is followed by EOF; TERM_SENT and
// KILL_SENT as they are sent. End comes once, after the lifecycle has
// decided and both streams are closed. The action's background work (the
// lifecycle's Spec.After: the next warm launcher, the removal of its
// cgroups) starts only once End has returned, when the broker has
// recorded the end, so that it does not compete with that action's own
// path (a next action may still wait for it: ahead.One.Take).
//
// # Limits
//
// Each limit has one enforcer, and the receipt names it per limit: the
// wall time and the hard output budget are the broker's (this package and
// broker/lifecycle end the group), CPU time, file size and open files are
// the launcher's rlimits, and memory and the number of processes are the
// action's cgroups where the host has the controllers
// (lifecycle.DetectCgroups at New; Limits says what enforces each, or
// why nothing does and how to get it). A missing controller does not
// refuse the profile: the action runs with that limit absent, and the
// card, the capability report and the receipt say so ("enforcedBy"
// memory or pids "none", no figure). The capability probe alone may set
// Launch.ProbeLimits, small figures under which it shows each offered
// limit binding.
//
// # Survivors
//
// Survivors, called by the broker at start, ends the processes of
// earlier actions still inside their cgroups (lifecycle.EndLeftovers),
// and of the actions just found in flight and in no cgroup, those of the
// process group of their recorded origin while its first process is
// provably the one recorded at launch (lifecycle.EndOrigin; the Observer
// is told each origin, before the launcher is sent Proceed). It
// reports what it found (pids, command lines, where, what proved them the
// action's) and did; processes nothing proves the action's are reported,
// never ended. The broker records it and the action's outcome stays
// unknown.
package runner
