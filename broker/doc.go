// Package broker is warrant's daemon: everything that decides whether an
// action may run, and the journal of what happened. It never executes
// anything itself; an Executor (broker/runner: launcher, supervision,
// output, receipts) is handed each action after its durable checkpoint,
// and reports back through MarkRunning, RecordEvent and
// FinishWithReceipt.
//
// # Pipeline
//
// Submit: Admit (the closed request shape; ARGUMENTS_INVALID or
// PATH_INVALID with a sentence) → identity (executable found on the
// sanitized PATH or by absolute path, every symlink recorded, opened
// without following any, fstat + bounded SHA-256; a "#!" script's
// interpreter pinned the same way, "#!/usr/bin/env NAME" pinned as NAME;
// the workspace opened by fd with openat2 RESOLVE_NO_SYMLINKS|
// NO_MAGICLINKS, the cwd beneath it with RESOLVE_BENEATH|NO_SYMLINKS|
// NO_MAGICLINKS|NO_XDEV) → the default policy and its digest → the
// fingerprint, SHA-256 of the canonical CBOR of the whole CommandIdentity
// → an exact lease match, else an approval request → sealed snapshot
// (cache) → Journal.Checkpoint → Executor.Start.
//
// # Invariants
//
//   - A lease matches only by byte equality of fingerprint, goal id and
//     current revision, and workspace (dev, ino, mnt_id). There are no
//     wildcards.
//   - A lease use is consumed in the same fsync'd transaction that records
//     the action EXECUTING, before anything may start. Triggers in the
//     schema refuse to refund a use, un-revoke a lease, lower a goal
//     revision or move a finished or unknown action.
//   - On start, actions left executing or running become unknown; their
//     uses stay spent and nothing is re-run. The operator's classification
//     is recorded as a statement, never as a process result.
//   - Submit refuses with SANDBOX_UNAVAILABLE, before anything else and
//     without consuming anything, unless the capability probe has verified
//     this host with this launcher and policy (probe.go); there is no
//     unconfined mode.
//   - Every action that reached the checkpoint ends with exactly one
//     signed receipt, recorded in the same transaction as its result;
//     actions found in flight at start get an unknown receipt
//     (UNKNOWN_TERMINATION) and are never re-run.
//   - One broker per state directory (flock on <state>/lock).
//
// # Decisions
//
//   - Actions submitted without a goal belong to the goal "default",
//     created by the first migration at revision 1, active.
//   - Pausing or cancelling a goal revokes its leases for good; resuming
//     does not revive them. Revising it leaves them unmatched.
//   - A pending approval request is reused for an identical submit; a
//     denial is reported once as APPROVAL_DENIED and the next submit asks
//     anew. Lease error codes (LEASE_EXPIRED, LEASE_EXHAUSTED,
//     LEASE_REVOKED, GOAL_REVISION_MISMATCH, GOAL_INACTIVE) come from the
//     checkpoint's re-check when the lease changed after it matched; an
//     unusable lease at submit time simply does not match.
//   - Directory identities (wire.DirIdentity) include the birth time, so
//     the fingerprint covers it: ext4 reuses a freed inode number at once,
//     and rm + mkdir of the cwd gives the same (dev, ino, mnt_id). The
//     launcher compares the same identity again before exec.
//   - The policy grants the executable's (and interpreter's) own directory
//     when the runtime paths do not cover it, never a parent; operators
//     widen it with configured read paths. The Landlock floor is 4, or 6
//     when the kernel has scopes (see policy.go).
//   - macOS has no openat2: paths are opened with O_NOFOLLOW_ANY and a
//     device check stands in for RESOLVE_NO_XDEV; there is no snapshot.
//
// # Threat model
//
// Requests come from a same-uid agent that may be hostile or confused; the
// sockets check the peer's uid, cap frames (wire.MaxAgentFrame), bound
// connections and frame time, answer malformed frames with
// ARGUMENTS_INVALID and close them, and survive handler panics. Workspace
// contents are hostile: nothing is followed, FIFOs do not block, files over
// 512 MiB are refused. The broker's checks are not the boundary — the
// launcher re-verifies everything and the kernel enforces the policy.
//
// # State directory
//
// journal.db (SQLite, WAL, synchronous=FULL, versioned migrations; the
// receipt log and its checkpoints, capability reports), keys/ (0700: the
// ed25519 receipt key and the separate output HMAC key, 0600), run/ (agent.sock,
// operator.sock), actions/<handle>/{home,tmp}, lock. Every directory 0700.
// An action's home and tmp are removed once its outcome is known and kept
// while it is unknown (RemoveActionDirs).
package broker
