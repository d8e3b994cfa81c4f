// Package receipt records what a target printed and signs what happened:
// the evidence half of warrant (docs/architecture.md §2.8–2.9). It is a library;
// the broker wires it to its pipes, journal and CLI.
//
// # Streams
//
// A Recorder takes one output stream (stdout or stderr) as it is read. For
// every chunk it counts raw bytes exactly and redacts. Redacted output is
// digested (SHA-256), retained as a head and a tail (profile.Retain each)
// and optionally shown live. The raw stream is bound by its MAC:
// HMAC-SHA256 under a broker-only key of its SHA-256 — never a bare hash
// of raw output that was not published as it is, which would let
// low-entropy secrets be enumerated. Until the first redaction the two
// streams are the same bytes and one SHA-256 serves both; where they part
// the raw digest continues from a copy of that state. Each chunk record
// carries the running raw MAC and redacted SHA-256 at its end, so each
// commits to every byte before it. The evidence states observed,
// redacted, retained and dropped bytes, the retained ranges, and a closed
// truncation reason; OverBudget tells the supervisor when the hard output
// budget is passed. Memory is bounded by Retain, the ruleset's window,
// MaxChunk and the hash workers' queues, whatever the target writes.
//
// The writer's goroutine redacts; the SHA-256 runs on a worker of its
// own, and the raw one, once the streams part, on another, each fed
// through a short queue of batches, so that the passes over the bytes run
// at once on as many cores as there are (see hashWorker for why a queue
// and not a double buffer). A worker starts with its first batch: a
// stream shorter than one is hashed at Close on the caller's goroutine,
// with no goroutine at all. The retained digest is not another pass over
// the head: it starts as a copy of the redacted digest's state at the
// head's end, and only the tail is hashed again at Close.
//
// # Redaction
//
// Rules are built-in credential shapes (cloud keys, GitHub/GitLab, sk-
// keys, Slack, JWTs, bearer tokens, PEM private keys) and exact values the
// broker knows are secret. Every rule starts with a literal and looks at
// most W bytes (its window). A literal prefilter finds candidates with a
// table of byte pairs, two adjacent ones per literal chosen by an
// estimate of how rare they are in ordinary text, checked at every second
// position, sixteen bytes a step (a hit is confirmed against the literal
// itself, and a literal whose rules all need a word boundary is passed
// where a word byte precedes it); text with no literal is released at
// once, except a last few bytes that are the start of some literal (so a
// line, or a prompt, reaches a live follower as soon as it is written). A
// candidate is decided only when W bytes past it have arrived or the
// stream ended, so the output is the same however the stream was cut:
// streaming redaction equals whole-buffer redaction (a fuzz target checks
// it). Only a "no" may come earlier, from bytes that no later byte can
// change: a token's run that ended too short, a BEGIN line that is no
// private key header. A token longer
// than its rule's cap and a PEM block without its END line stay redacted
// window after window until they end. Evidence records the ruleset id (a
// digest of the built-in rules), the number of exact values (never their
// digest), and hit counts per type — never a secret. If a rule fails, the
// stream is blocked (EVIDENCE_BLOCKED): nothing held or read afterwards is
// ever released. Redaction is for accidental disclosure; a hostile target
// can always encode a secret past any rule.
//
// # Receipts
//
// A Receipt is the command-receipt predicate (Format: v2, whose raw MAC is
// of the raw stream's SHA-256; v1 receipts, whose raw MAC is of the raw
// bytes, still decode and verify): ids, goal, identity and
// fingerprint (environment names only, never values), policy, profile
// limits with what enforced each (Enforcement: the broker, the launcher's
// rlimits, a cgroup v2 or v1 controller, or none), launcher-measured
// sandbox facts, times on the monotonic and wall clocks, pid, root exit or
// signal, group-gone evidence, outcome, what the cgroups counted (Usage)
// and whether the memory limit ended it (limitReached), stream evidence,
// what the sandbox was seen to refuse (Denials, denials.go: the sources
// that watched, the exact total, the exact count of each class of call,
// socket family, rule and source, and at most wire.MaxDenials records of
// effect, call, object, rule, source, count and first time as samples),
// for an action with an egress grant what it connected to through the
// broker's proxy (Egress, egress.go: the grant, the exact counts of
// connections, refused ones and bytes per granted entry, and at most
// wire.MaxConnections connections with host, port, resolved address,
// SNI, bytes each way, times and allowed or why not),
// events and the previous entry's digest. Unobserved facts are
// absent, not zero, and Validate refuses a receipt that claims more than
// its outcome allows (an exit code only for exited; no process for
// known_not_executed or spawn_failed; group-gone evidence for every
// executed outcome; UNKNOWN_TERMINATION exactly for unknown; a memory or
// process-count figure, and a usage counter, only where a cgroup
// enforced that limit; limitReached memory exactly when an OOM kill was
// counted; denials only for a started action, their classes counting
// the total, their records' counts never past their class's; egress
// connections only for a started action). Receipts made before each limit had its own enforcer carry
// one word ("rlimit", "none", "unknown") for all of them and still
// decode to the same bytes.
//
// # Survivors records
//
// A survivors record (survivors-ended.v1) is a signed, chained entry of
// the log: a later broker found processes of an unknown action still
// inside the action's cgroups and ended them. It names that action's
// unknown receipt by its chain digest (Verify requires an earlier unknown
// receipt of the same action), the pids and command lines found, the
// cgroups, how they were ended and whether they were then seen gone. It
// changes nothing in the receipt: the outcome stays unknown.
//
// # Goal verdicts and operator statements
//
// A verdict (goal-verdict.v1, goals.go) is the broker's evidence
// oracle's signed judgement of one goal under one revision: done or not,
// each step's and criterion's finding, the receipts and operator
// statements it used (log index, id, chain digest) and the files it read
// back (path, state, size, SHA-256). An operator statement
// (operator-statement.v1) records what the operator said about one step
// through the operator channel; it claims nothing ran. Both have the goal
// revision as subject (goal:ID@REV by the SHA-256 of its document) and
// are chained and checkpointed like receipts; Verify requires a verdict
// to name earlier entries exactly (problem kind verdict).
// Verifier.Evidence returns the receipts and statements of a verified
// log that may serve as evidence: entries with no problem, covered by the
// latest verified checkpoint, and none when the log as a whole fails. A
// receipt's artefacts are the outputs its step declared, read back once
// its group was gone (present with size and SHA-256, missing, or
// unchecked with the reason); Validate allows them only for a started
// action of a step whose group was confirmed gone.
//
// # Format
//
// The predicate is canonical JSON: encoding/json of the Go structs, whose
// field order is fixed, with no maps or floats; decoders refuse unknown
// fields and any bytes that do not re-encode identically. It is the
// predicate of an in-toto Statement v1 (subject: the executable and any
// interpreter by approved SHA-256; predicateType ReceiptPredicate, under
// the reserved .invalid domain so it claims no one's name), in a DSSE
// envelope (payloadType application/vnd.in-toto+json) signed with the
// broker's ed25519 key over PAE. Deletion records use DeletionPredicate.
// The log is a hash chain (each statement names its log index and the
// SHA-256 of the previous statement) and an RFC 6962 Merkle tree (leaves:
// envelope bytes) whose roots are signed as checkpoints in the signed-note
// format. ExportDSSEJSONL writes one envelope per line.
//
// # Verification and retention
//
// Verify checks every envelope, signature, statement, position, chain
// link, stored body and checkpoint and reports each problem by index and
// kind: edits, deletions, insertions and reorderings (moved, chain), a
// signature by another key (foreign_key), and truncation below a
// checkpoint, and that each survivors record names an earlier unknown
// receipt of its action. Entries after the latest checkpoint can be cut off without
// trace; Report.Unanchored says how many. Expect adds what a verifier
// knows from outside the log: that every append was checkpointed (the
// broker's rule; then an unanchored tail is a problem), checkpoints kept
// elsewhere that the log must extend (tail_cut, log_cut,
// checkpoint_swapped), the receipt ids named outside it
// (missing_receipts) and the key stored beside it (key_swapped).
// ParseCheckpoints reads a file of checkpoints (a witness file).
// Retention (Chain.Prune) deletes retained output bodies but keeps the
// receipts with their digests and counters, and appends a signed, chained
// deletion record; Verify then lists which bodies were deleted, when and
// under what policy. This proves deletion by policy, not physical erasure.
//
// # Threat model
//
// Targets are hostile and control their output: they may flood it, split
// secrets across reads, emit invalid UTF-8 or terminal escapes (the
// agent-facing Project escapes them), or stall. Whoever can edit the
// store but not read keys/ can delete, reorder or alter entries; Verify
// detects it. The keys (keys/, 0700; files 0600; signing and HMAC keys
// separate) are outside every target's sandbox. Someone holding the
// signing key can forge anything; receipts do not defend against the
// broker's own uid.
//
// This package imports neither golang.org/x/sys/unix nor unsafe; a test
// enforces that.
package receipt
