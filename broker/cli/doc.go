// Package cli is the broker command's user interface (docs/architecture.md
// §3.2) and the thin client `broker` (cmd/broker): it links only what a
// round trip to the daemon needs. The commands that need the broker
// itself, read the state directory or link receipt or contract code
// (serve, probe, mcp, receipts, output, caches, toolchains, goals,
// contracts, status without a handle, and run's embedded broker) have
// their bodies in broker/clid, which brokerd runs through Run with its
// Local; the thin client hands such an invocation to brokerd beside it
// (handoff.go: execve, never a $PATH search; none there is
// SANDBOX_UNAVAILABLE). The command table, usage and help are this
// package's, for both.
// `serve` runs the daemon; `run` submits one action and waits for it;
// `status`, `wait` and `cancel` follow an action, `output` shows what its
// receipt retained of its output (or, with --from, what the broker
// still holds); `approvals`, `approve`,
// `deny`, `leases`, `revoke`, `actions` and `resolve` are the operator's;
// they all talk to the daemon through the client package. `receipts`
// reads the journal directly (read-only, without the state lock), except
// `receipts prune`, which needs the state directory to itself;
// `toolchains` says which toolchain an action of a program gets (its
// root, read-only, its variables, why), reading only <state>/env and the
// host; `contracts` lists and shows the shipped program contracts, and
// enables (a grant over operator.sock) and revokes them;
// `probe` proves the sandbox on this host; `mcp` serves agents the MCP server
// (broker/mcp) on stdin and stdout, against the daemon or an embedded
// broker opened as `run` opens one. Every command takes --state DIR
// (default $WARRANT_STATE, else $XDG_STATE_HOME/warrant, else
// ~/.local/state/warrant), --debug and, where it prints data, --json: one
// object under the convention of docs/json.md, printed through printJSON
// with its schema name, from a view struct of this package or broker/view
// (never a wire or journal struct); listings take --limit and --after and
// say when they are truncated (json.go).
// `approvals` lists the pending requests (approvals.go), and with --all
// those decided or expired lately, in text and JSON alike; with --watch
// it follows the queue (watch.go): it lists the pending requests every
// 300 ms (the operator socket has no wait for a request not yet made),
// prints each new one's card, and notes in one line each one decided
// elsewhere or expired. On a terminal, put in key mode (tty.go) and
// restored on every way out (q, Ctrl-C, a signal), one key decides the
// head of the queue (watch_keys.go): y or Enter one use, a number and
// Enter that many (as the run prompt bounds them), n a denial with a
// reason, s skips, c offers the library contract that covers it and the
// earlier requests of its executable and, on y, enables it (20 uses, 8
// hours), which settles the request. Keys are decoded first (an escape
// sequence is one ignored key) and are case-exact; a key answers only the
// question shown when it was read, and the first 0.5 s of a question
// about another request, or of an offer, takes none; typing ahead is
// flushed at each new question, and a head that leaves mid-question is
// noted and the next one asked with its card. The watch may start before
// the broker; one that does not answer (or answers BUSY) is said once,
// with why, and listed again with a backoff up to 5 s. Failures are said
// as every command says them (failure.go: failureWords, the account
// under --debug); Ctrl-C or a signal abandons a call in flight. Off a
// terminal the queue is only printed, and stderr says once that nothing
// is decided there.
// Human output is meant to be read before deciding: the approval card
// (card.go) shows the command, what runs and where, and what limits it a
// few words a row (cardtext.Brief condenses the request's limitations
// text; a weakening keeps its words, a line it does not know is shown
// whole), wrapped to the terminal (80 columns off one, its width read in
// tty.go; a word cut ends its row with ↩) in at most 20 rows for an
// ordinary command, no byte of the request as is (a name that does not
// print as itself is quoted: view.Plain); a request with an egress grant
// has network rows: "May connect to:" and the exact entries, a literal
// local address marked so, and what the broker's proxy cannot promise
// (cardtext.EgressList, cardtext.EgressLimit); --debug adds the host's own
// account of a missing limit, --full every number the approval binds and
// the whole text; the commands it prints for another terminal carry
// --state unless the state directory is the built-in default.
//
// # Messages
//
// A refusal is its stable code and a sentence in the user's words that
// names the fix; the system's own account (a Go error chain, the
// wire.Error's Detail) is printed only under --debug. A usage error is a
// sentence and one usage line, the command's synopsis from the command
// table; -h, --help and `broker help [CMD]` print usage, what the command
// does and its flags on stdout and exit 0. Listings (`actions`,
// `leases`, `receipts list`) show the shell-quoted command
// (view.CommandLine); `leases` hides spent, expired and revoked leases
// unless --all, and says of a usable one the broker would never match
// (granted under another policy or environment) that it will not match
// and why, in its state column as in JSON (view.LeaseOf). A follower
// whose stream breaks says why in words (FollowBroke); an INTERNAL
// refusal is said plainly (plainly), its message, the system's own
// account, under --debug; `run --json` carries the same sentence as the
// text (saidPlainly), the account going to stderr under --debug only.
// `probe` beside a broker serving the state directory runs no probe: it
// shows that broker's stored report and when it was made, exits 0 only
// when that is verified, and refuses --launcher (servedReport);
// `receipts prune` refuses there in a sentence (serving).
//
// # broker run
//
// When no daemon answers on the state directory, `run` opens an embedded
// broker there (it takes the state lock and serves the usual sockets, so
// `broker approve` from another terminal reaches it) and closes it when
// the action has ended. Either way it follows the action over the agent
// socket (wire.Follow), so a daemon run and an embedded run print the
// same: every redacted byte as it is released, in order, however slowly
// they are read (a stream that breaks is followed again from its
// offsets; a range the broker no longer holds would be a marker naming
// it), and a summary saying what was printed beside what the receipt
// retains (`broker output` shows the retained head and tail, and with
// --from a stream from an offset, from the broker while it holds it).
// With --json nothing streams: the object's text and counts are the
// agent-facing projection. On a terminal a one-line progress indicator
// (follow.go) says what is awaited, for how long and how many bytes were
// seen; it is erased before any output and the summary. An interrupt
// cancels the action and keeps following it: cancel is not abandon. A
// second interrupt, a cancel that cannot reach the daemon, or a daemon
// that stops answering (every request is bounded, broker/client; a
// stopped daemon is sent nothing) ends the wait or the following: 123,
// the outcome unknown here, the sentence saying why and to ask `broker
// status`; a submit that never reached the daemon is IO_FAILED, 125.
// Brokers are opened under the state lock, taken before anything the
// directory's brokers share is made (broker/clid open.go). The run's exit
// status is the target's, or one of the codes in run.go (124 timeout, 125
// not executed, 123 unknown, 130 interrupted, …) so that exit code,
// signal, timeout, cancel and refusal stay distinct. Usage errors and
// failures before the submit (no launcher, no workspace) are 125 as well
// and, with --json, print the one object with its error. The summary line
// and --json name the lease the run used and the uses it has left. The
// embedded broker's log is not shown but for one sentence: how many
// actions a crashed broker left in flight and this one made unknown, said
// once.
//
// When approval is needed on a terminal, `run` shows the card and asks
// [y/N] (y: one run; a number: that many, the rest kept on the lease)
// while it waits, through the broker (approval_wait), for a decision
// made elsewhere (prompt.go): whichever comes first decides, and it
// prints what the broker answered. Approved (here or by `broker approve`
// elsewhere): it names the lease and submits again, on it. Denied (n, an
// empty line, Ctrl-D — which first ends the prompt's line — or `broker
// deny` elsewhere): APPROVAL_DENIED, exit 125, and since the denial has
// been reported the next run asks anew. Ctrl-C: the request is withdrawn
// (denied, reason "requester cancelled"), nothing runs, CANCELLED, exit
// 130. The terminal is read by poll, so a decision made elsewhere leaves
// nothing half-read. Without a terminal `run` prints the approve command
// and waits the same way; interrupted, it exits 130 and the request stays
// pending until decided or its TTL (30 minutes), so the next run of the
// same command finds it. An interrupt abandons the call in
// flight at once, so a stopped broker does not hold the run. A decision
// the run sends itself (--approve's grant, or the prompt's y or n) that
// goes unanswered (interrupted, or past the reply timeout) ends the run
// as not executed (IO_FAILED, exit 125): every submit of the run was
// answered, so nothing of it ran, and the sentence says the request may
// have been decided (`broker approvals` and `broker leases` show it).
//
// `run --egress HOST:PORT|PRESET` (repeated, or a comma-separated list)
// asks for network access, checked here as the wire checks it
// (wire.CheckEgressAsked); the broker expands the presets of
// <state>/egress, and the card shows the exact list a human approves.
// `approve --egress HOST:PORT,…` grants exactly that list instead
// (canonical, sorted; `--egress none` grants none), a preset's name
// refused: a lease names its hosts (egress.go).
//
// With --call-id ID the submit is idempotent in its session (the broker
// package doc, "Call ids"): run again with the same ID and command, it
// follows the action the first one started — says so on stderr, and
// reports its state now, an unknown one included — and runs nothing.
//
// # broker receipts verify
//
// `receipts verify` checks the log as a log the broker checkpoints on
// every append, against the receipt ids the journal's actions name; with
// --pubkey FILE and --checkpoint FILE it holds the log to a key and
// checkpoints kept outside the state directory (docs/receipts.md).
// `receipts checkpoint` prints the newest checkpoint to keep or publish,
// once the log verifies. `serve --witness DIR` copies every checkpoint to
// a file in DIR (broker/internal/witness); `status` reports it.
//
// Exit status of the other commands: 0 success, 1 refused or failed (the
// code and sentence are printed), 2 usage error; `receipts verify` exits 3
// when it read the log and the log fails verification.
package cli
