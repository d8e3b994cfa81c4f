// Package broker is warrant's daemon: everything that decides whether an
// action may run, the durable record of what happened, and the evidence
// made of it. It never executes anything itself: an Executor
// (broker/runner) is handed each action after its checkpoint, with the
// wait for that checkpoint's fsync (its launcher executes only after it),
// and reports what it observed to the action's observer.
//
// # Rooms
//
// The package root only ties the pipeline together; each step lives in
// its own room:
//
//	broker (root)              Config/Open/Close (broker.go), the submit driver (submit.go),
//	                           contract grants: enable, for a request too, and match
//	                           (contracts.go), the contracts offered for a request (offers.go),
//	                           dispatch of socket messages, wait and approval_wait
//	                           (handlers.go), whether a listed lease can still match here
//	                           (leases.go), the capability gate and the card's sentences on
//	                           protection and memory and process limits (capability.go),
//	                           evidence: observer, receipt building and sealing (evidence.go,
//	                           receipts.go), live output (follow.go), goals (goals.go), the
//	                           state directory without a broker: its lock, caches, toolchains,
//	                           unremoved action directories (state.go), and the read-only
//	                           readers of the receipt log, capability and witness
//	                           (receipts_read.go)
//	broker/internal/admission  the request's way in: call ids, resolution with what the broker
//	                           adds (environment, policy, workspace cache, toolchain, the
//	                           operator's declared variables, bindings and git identity, where
//	                           a name missing from the sanitized PATH is on the broker's own),
//	                           the places no workspace may overlap, the alias scan's scope
//	broker/internal/identity   admission of the closed shape, the workspace's overlap with
//	                           the protected places, resolution to a sealed Resolved,
//	                           shebang, fingerprint
//	broker/internal/aliasscan  the workspace's hard links to files outside its writable
//	                           scope, and its mount points, by descriptor
//	broker/internal/policy     the default policy, the Landlock floor, the card's limitations
//	broker/internal/journal    the only package that speaks SQL
//	broker/runner              the Executor contract and its implementation (launcher,
//	                           lifecycle, output recording)
//	broker/lifecycle           one launch: socketpair, launcher, supervision, group gone
//	broker/internal/metadata   the target's metadata calls (chmod, chown, xattrs, times),
//	                           answered beneath the writable scope (seccomp notification);
//	                           the calls the filter denies by name, refused and counted
//	broker/internal/denial     what one action's sandbox refused: bounded, exact totals
//	broker/internal/protect    the workspace's protected paths, before and after: detected
//	broker/internal/probe      the capability battery and its judging on the host
//	broker/internal/snapcache  sealed snapshots of executables, keyed by full identity
//	broker/internal/caches     the persistent per-workspace caches: made, listed, removed by
//	                           descriptor
//	broker/internal/toolchain  the toolchain layout an executable lies in (rustup, pyenv,
//	                           nvm, …, a Go root, a JDK): its root, variables and why
//	broker/internal/server     the two unix sockets: peer checks, frames, bounds
//	broker/internal/statedir   the state directory: layout, lock, receipt keys, the operator's
//	                           files' rule
//	broker/internal/actiondirs actions' private HOME and TMPDIR: a spare made ahead, removal
//	                           in the background, what could not be removed
//	broker/internal/witness    every checkpoint copied to a file outside the state directory
//	broker/internal/follow     live output: the fan-out of redacted chunks to the agent
//	                           socket's followers, lossless through a bounded spill
//	broker/internal/seam       every test seam, none in a production build
//	broker/cli, broker/client  the `broker` command, and the Go client of the sockets
//	broker/view                what a person or an agent is shown: `broker run --json`'s
//	                           object and a receipt's summary beside its verdict
//	broker/mcp                 `broker mcp`: the MCP server, an agent client of agent.sock
//	                           (no operator power)
//
// # Edges
//
// Data flows one way: identity → policy → journal → executor → evidence.
// The imports among these packages (go list -deps; no cycle, and nothing
// under broker/internal imports the root):
//
//	admission  → identity, aliasscan, policy, journal (call ids), caches, toolchain,
//	             protect (git's config grammar), statedir, wire, internal/{envpolicy,fsid}
//	identity   → wire, internal/{envpolicy,fsid,retry}
//	aliasscan  → wire, internal/retry
//	policy     → wire, internal/{landlockabi,profile}
//	journal    → wire, receipt
//	lifecycle  → metadata, wire, receipt, internal/{profile,retry}
//	metadata   → internal/retry
//	protect    → wire
//	runner     → identity, lifecycle, receipt, wire, internal/{fsid,profile,snapshot}
//	probe      → identity, policy, runner, lifecycle, wire, internal/{landlockabi,probeprog,profile}
//	snapcache  → wire, internal/snapshot
//	caches     → wire, internal/retry
//	toolchain  → wire, internal/envpolicy
//	server     → wire
//	statedir   → client (the socket paths), receipt (the keys)
//	actiondirs → journal (new ids), internal/{ahead,rmtree}
//	witness    → journal (its reports), receipt
//	follow     → wire, internal/profile
//	seam       → runner
//	view       → receipt, wire
//	root       → all of the above, client, view (an offer's command lines), receipt, wire,
//	             internal/{fsid,profile}
//	mcp        → root (the receipt log, read-only), client (its Agent half), view, receipt, wire
//	cli        → root, client, view, mcp, follow, policy, probe, runner, receipt, wire, internal/probeprog
//
// identity takes the environment and the policy as inputs (an Inputs
// function of the workspace and the executable: admission.Resolver joins
// policy.For, the declared environment, the workspace's cache and the
// toolchain), so the fingerprint covers them without identity depending
// on policy; likewise the places no workspace may overlap
// (identity.Protected: the state directory, the binaries' directories,
// the host's roots), which admission.Authority names and the root opens
// once at Open. The runner holds no reference to
// the broker: it reports events and one Observation to a runner.Observer,
// and the root journals them, builds the receipt from the journal's facts
// plus the observation, and seals it with the result in one transaction.
//
// # Where things live, and why
//
//   - The server is its own room: its invariants (peer uid, frame caps,
//     deadlines, bounded connections, panics answered) are about bytes on
//     a socket, not about actions. The root keeps only the dispatch of
//     decoded messages to journal calls and the pipeline.
//   - The snapshot cache is its own room: it is shared by submit and the
//     probe, and its invariant (a snapshot is only ever handed out for the
//     exact file identity and digest it was made from) stands alone.
//   - Admission is its own room: what the broker adds to a request before
//     its lease is matched (its call id, the inputs and authority of its
//     resolution, the operator's files, the alias scan's scope) is decided
//     at Open or read from the journal, never from the running pipeline;
//     the root holds one admission.Resolver and calls its steps in order.
//   - The state-directory layout is its own room (broker/internal/statedir):
//     one lock, one layout, used by Open, the read-only readers, the
//     probe's scratch directory and the CLI's commands without a broker
//     (state.go); the actions' private directories and the witness are
//     rooms of their own beside it.
//   - The Executor contract lives in runner beside its implementation;
//     the root, the probe and the seams import its types.
//   - The workspace caches are their own room: the layout under
//     <state>/caches and the rule that nothing beneath a cache is trusted
//     (targets write there) stand alone; the root decides when a cache is
//     used (admission.Resolver.Inputs) and when it may be removed (the
//     state lock, PruneCaches in state.go).
//
// # Invariants
//
//   - A lease matches only by byte equality of fingerprint, goal id and
//     current revision, and workspace (dev, ino, mnt_id). There are no
//     wildcards.
//   - A lease use is consumed in the same transaction that records the
//     action EXECUTING, fsync'd before anything of the action executes
//     and before the submit is answered (journal.Checkpoint and its
//     durable; runner.Launch.Durable). Triggers refuse to refund a use, un-revoke a
//     lease, lower a goal revision or move a finished or unknown action.
//   - On start, actions left executing or running become unknown; their
//     uses stay spent and nothing is re-run. The operator's classification
//     is recorded as a statement, never as a process result.
//   - Submit refuses with SANDBOX_UNAVAILABLE, before anything else and
//     without consuming anything, unless the capability probe has verified
//     this host with this launcher and policy (capability.go); there is no
//     unconfined mode.
//   - A workspace holding a second name (hard link) of a regular file
//     outside it, or one the alias scan cannot finish within its bounds,
//     is refused with WORKSPACE_ALIASED after identity resolution and
//     before a lease is matched or an approval asked for
//     (broker/internal/aliasscan); nothing is consumed.
//   - Every action that reached the checkpoint ends with exactly one
//     signed receipt, recorded in the same transaction as its result
//     (journal.LogTx); actions found in flight at start get an unknown
//     receipt (UNKNOWN_TERMINATION) and are never re-run.
//   - One broker per state directory (flock on <state>/lock). Whatever
//     brokers of one directory share by name (the runner's cgroup
//     directories) is made and removed only under the lock: the CLI takes
//     it with LockState before runner.New and hands it to Open
//     (Config.Lock), so a broker refused the lock leaves the running one
//     whole.
//   - Test seams (broker/internal/seam) exist only in tagged builds or
//     test binaries; Open logs them and the capability report names them.
//
// # Decisions
//
//   - Actions submitted without a goal belong to the goal "default",
//     created by the first migration at revision 1, active.
//   - Pausing or cancelling a goal revokes its leases for good; resuming
//     does not revive them. Revising it leaves them unmatched.
//   - Goals (goals.go, broker/internal/goals): agents create, revise,
//     show, verify and list them on agent.sock; pausing, resuming,
//     cancelling and the operator's statements (an operator criterion's
//     evidence) are operator.sock's. A submit naming a step is gated
//     before identity resolution: an unknown step is ARGUMENTS_INVALID,
//     and a step whose dependencies are not VERIFIED_DONE in the latest
//     verdict under the current revision, which the gate verifies under
//     the broker's key, is STEP_BLOCKED; nothing is asked, consumed or
//     started. A step's declared outputs are read back beneath the
//     action's workspace (held by descriptor from the submit) once an
//     exited action's group is gone, and listed in its receipt
//     (evidence.go). VerifyGoal verifies the whole log and judges the
//     goal inside one log append, so the verdict it signs and the
//     evidence it names come from the same log.
//   - A pending approval request is reused for an identical submit; a
//     denial is reported once — by approval_wait to a requester waiting
//     for it (the `broker run` prompt), or else as APPROVAL_DENIED to the
//     next submit — and after that the next submit asks anew.
//   - A pending request lives until it is decided or its TTL runs out
//     (journal.RequestTTL, 30 minutes), whoever asked for it: it survives
//     its requester's connection and a broker restart, so a one-shot MCP
//     client, an agent that restarts its server or a second `broker run`
//     of the same command finds it (the identical submit reuses it) and
//     runs under its decision. Past its TTL it expires with the reason
//     "no one decided it within 30m0s", can no longer be approved or
//     denied (`broker approve` says it expired and why), and the next
//     submit asks anew; a call id's repeat asks anew too. Lease error codes (LEASE_EXPIRED, LEASE_EXHAUSTED,
//     LEASE_REVOKED, GOAL_REVISION_MISMATCH, GOAL_INACTIVE) come from the
//     checkpoint's re-check when the lease changed after it matched; an
//     unusable lease at submit time simply does not match.
//   - Processes of earlier actions that outlived a previous broker and
//     are provably their own — still inside the action's cgroups, or in
//     the process group of the action's origin (pid, start time and boot,
//     journalled before the launcher is sent Proceed) while that
//     first process is still the one recorded — are ended at Open
//     (runner.Survivors): logged, journalled as a SURVIVORS event, and
//     recorded in the receipt chain as a signed survivors record naming
//     the action's unknown receipt, what identified them, the pids, the
//     command lines and how they were ended. The outcome stays unknown
//     and nothing is run again. Processes it cannot end, or cannot prove
//     the action's (the first process is gone but its group lives on),
//     are reported with their pids and command lines, not ended.
//   - Contracts (contracts.go, offers.go; docs/contracts.md). A grant
//     binds a base identity (the executable resolved as a submit with no
//     arguments in the workspace root would be, or a pending request's
//     identity) without argv and cwd, and admits every argv its contract
//     accepts beneath the action's cwd; the operator may enable one for a
//     pending request (wire.ContractEnable.Request), which must run the
//     very program the contract is about (its resolved file, and a
//     script's interpreter, are what the contract's executable resolves
//     to in the workspace, on the sanitized PATH or in its toolchain's
//     bin/, outside the workspace and cache, unless the operator names
//     that file) and accept its argv in its cwd, reopened by descriptor
//     and held to the identity the request named: the journal then
//     settles it, and the oldest other pending requests of the workspace
//     the grant admits, up to its uses, as approved, covered by the
//     grant, in the same transaction, and approval_wait answers the grant
//     as its lease (and, for a request still pending, answers expired at
//     its TTL). An
//     offer (wire.ContractOffer) lists the library contracts that would:
//     each with the command lines it covers, the request's and those of
//     the latest requests a grant for it would bind (the same base).
//   - Call ids (broker/internal/admission's calls.go). A submit may
//     carry a call_id (wire.Submit); it names one request — the
//     workspace and the closed request (executable, argv, cwd, profile,
//     goal, with goal "" read as the default goal) — within its session. Sessions are independent
//     namespaces; submits without a session share one. A repeat with any
//     other workspace or request is refused with ARGUMENTS_INVALID,
//     naming the call id, and records nothing. A repeat of the same
//     request answers, without starting anything or consuming a use:
//     once the call started an action, a *wire.Status of that action
//     as it is now — accepted or running while in flight, terminal
//     with its result once it ended (whatever the outcome, including
//     known_not_executed: the call is done, a new call id tries again),
//     unknown after a broker restart found it in flight (never
//     replayed: the unknown handle is the answer, and the operator
//     classifies it); while its approval request is pending under the
//     goal's current revision, that same request (never a second
//     one, even if the executable changed meanwhile); once that request
//     was denied, APPROVAL_DENIED every time. Once its request was
//     approved, the repeat goes through the pipeline: a matching lease
//     starts the action and binds it to the call, a lease that no
//     longer matches raises a new request, which the call then stands
//     for; so does a request that expired. A refusal before an approval request or an action exists
//     (BUSY, PATH_INVALID, WORKSPACE_ALIASED, …) binds nothing: the
//     repeat is judged afresh. Concurrent repeats are settled in the
//     checkpoint's transaction: one starts the action, the others
//     answer it (journal.ErrCallStarted). Bindings are kept for good.
//   - A profile's memory or process-count limit the host cannot apply
//     does not refuse the action: the card says it is not limited, why,
//     and how to get it (capability.go), and the receipt claims no figure
//     for it (broker/lifecycle's package doc has the rule).
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
// ed25519 receipt key and the separate output HMAC key, 0600), run/
// (agent.sock, operator.sock), actions/<handle>/{home,tmp}, probe/ (the
// capability battery's scratch directory, removed after each probe),
// caches/<key>/{workspace,data/} (one per workspace identity, kept across
// actions; broker/internal/caches), env (optional: the operator's declared
// variables, NAME=VALUE lines, a regular file of the broker's uid not
// writable by others; admission.DeclaredEnv), bindings (optional: the
// executables sealed by default; admission.ReadBindings), egress
// (optional: the operator's named egress presets, NAME = HOST:PORT, …
// lines; egress.ReadPresets), lock. Every
// directory 0700 (broker/internal/statedir). An action's home and tmp
// are removed once its outcome is known and kept while it is unknown
// (broker/internal/actiondirs); a cache only by `broker caches prune`. With
// Config.Witness (`serve --witness DIR`) every checkpoint is also copied
// to a file in DIR, which must lie outside the state directory
// (broker/internal/witness).
package broker
