// Package goals is the broker's evidence oracle (docs/architecture.md
// §2.10, docs/goals.md): goal documents with steps and mandatory
// criteria, the validation of their step graph, the read-back of files
// beneath a goal's workspace, and the judgement that grants
// VERIFIED_DONE.
//
// # Goal documents
//
// A document (Spec) names a title, the workspace (absolute) and at least
// one step. A step has an id, depends_on, the outputs its actions declare
// and at least one criterion from the closed set: receipt (a command
// identity {executable, argv, cwd} or a fingerprint, and an exit code,
// default 0), file (a workspace-relative path that must exist as a
// regular file, with any of: SHA-256, contained text, an RFC 6901 JSON
// pointer whose value equals a given JSON value), artefact (one of the
// step's outputs, optionally with its SHA-256) and operator (a prompt the
// operator answers with a statement through the operator channel).
// Decode is strict: unknown members, members of another kind, unclean or
// escaping paths, anything over the bounds (spec.go; with the document's
// 64 KiB they keep a view, the document and a verdict, under the wire's
// 900 KiB: TestViewBound), and a graph with duplicate ids, missing
// dependencies or a cycle are ARGUMENTS_INVALID, with one sentence naming each duplicate,
// each missing dependency and a cycle's members in order.
//
// # The oracle
//
// Evaluate judges one revision of one goal from an Input: the evidence of
// a verified log (receipt.Verifier.Evidence: only entries with no problem,
// covered by the latest verified checkpoint, and none at all when the log
// as a whole does not verify) and a Reader of files. A receipt counts for
// a step only when its goal, revision and step are this goal's current
// revision and that step and it was taken in the goal's workspace; the
// latest receipt matching a criterion's command identity decides (a later
// failing run outweighs an earlier success), and it must have outcome
// exited with the wanted code, the group confirmed gone and no protected
// path changed. An artefact criterion takes the latest receipt of the
// step that lists artefacts: it must have exited 0 under the same
// conditions, list the output present (with the wanted SHA-256, if any),
// and the file must read back now with the digest the receipt recorded.
// A file criterion is read back at verification time. An operator
// criterion is met by the latest operator statement about the step under
// this revision. Stdout, stderr, exit 0 alone, model claims, receipts of
// another goal, revision, step or workspace, and entries that fail
// verification are never looked at as evidence. A step is done only when
// every criterion is met and every dependency is done; the goal only when
// every step is. The verdict (receipt.Verdict) names each receipt and
// statement it used by log index, id and chain digest, and each file it
// read back with its state, size and digest; the broker signs it into the
// log.
//
// # Read-back
//
// ReadBeneath opens a file beneath the workspace by descriptor with
// identity.OpenFileBeneath (openat2 RESOLVE_BENEATH|NO_SYMLINKS|
// NO_MAGICLINKS on Linux, O_NOFOLLOW_ANY on macOS; O_NONBLOCK, so a FIFO
// cannot block), requires a regular file, and digests it, streaming up
// to MaxArtefactBytes (256 MiB), or holding it for contains and JSON
// pointer checks up to MaxFileBytes (16 MiB). A missing file (ENOENT or a
// component that is not a directory) is "missing"; a symlink on the way,
// a non-regular file, a file past its bound or any read error is
// "unchecked" with the reason, and nothing is claimed about it.
//
// # Threat model
//
// The agent writes the goal document and controls the workspace and
// every target's output; it cannot sign. Its document is validated, its
// paths never escape the workspace, and its files are read back by the
// broker itself without following symlinks. What makes a goal done is
// only what the broker signed (receipts, statements) and what it read
// back; someone who can edit the store but not read keys/ can delete or
// alter entries, which makes the log fail verification and so grants
// nothing. The step gate (broker) trusts only a verdict it verifies
// under its own key; the journal row that finds the latest verdict is an
// index, and deleting such rows could only bring back an earlier verdict
// of the same goal and revision.
package goals
