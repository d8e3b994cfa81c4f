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
// decided and both streams are closed.
//
// # Limits
//
// Resource limits are enforced by rlimits in the launcher (CPU, file size,
// open files, core). The per-action cgroup, when a writable cgroup v2
// directory exists, is used to kill the whole action and to confirm it
// gone; memory and pids limits are not set yet, and every receipt says
// "enforcedBy": "rlimit" with no memory or pids figure, rather than claim
// them.
package runner
