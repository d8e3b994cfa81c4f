// Package runner is the broker's Executor: it turns a checkpointed action
// into one launch of the pinned launcher, supervises it with
// broker/lifecycle, records both output streams with receipt.Recorder
// (streaming redaction, exact counters, head and tail), journals each
// lifecycle event as it is observed, seals a signed receipt, and records
// the terminal (or unknown) result.
//
// # The launcher is pinned
//
// New opens the launcher binary once, at broker start, copies it into a
// sealed memfd (internal/snapshot) and records its SHA-256. Every launch
// executes that snapshot through /proc/self/fd, so replacing or rewriting
// the file on disk afterwards changes nothing the broker runs.
//
// # Order of records
//
// STARTED is journalled when Ready is followed by EOF; TERM_SENT and
// KILL_SENT as they are sent. When the lifecycle has decided, the receipt
// is sealed first and the result is recorded with its receipt id; a
// failure to seal is logged and the result is still recorded, without a
// receipt id, rather than leaving the action in flight.
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
