// Package journal is the broker's durable record and the only package
// that speaks SQL: the schema and its migrations, the triggers that keep
// its invariants, goals and their documents per revision, approval
// requests (with their TTL, approvals.go), leases, contract grants
// (contracts.go: a lease row, a decided request and the contract's name
// and digest, and the pending request a grant settled), actions and their events
// (and step, and a contract's parse), submit call
// ids, the receipt log's rows and checkpoints, the index of goal
// verdicts, and capability reports. No other package holds the database.
//
// The journal is one SQLite database (the pure-Go modernc.org/sqlite
// driver) in WAL mode with synchronous=FULL on a single connection, so a
// committed transaction has been fsync'd before Commit returns and
// transactions are serialized in the process; the broker's state-directory
// lock keeps other writers out. Readers beside a running broker use
// OpenReadOnly. Two records are committed with synchronous=NORMAL instead
// (relaxedTx), durable across the broker's death but not the host's,
// because only the broker's death makes them matter: an action's origin
// (RecordOrigin, read to find processes that outlived a broker, which a
// host's crash leaves none of) and its move from executing to running
// (MarkRunning: recovery treats both alike). The next fsync'd commit
// makes them durable too; WAL order is kept. The EXECUTING checkpoint is
// committed so too, and made durable by an fsync of the write-ahead log
// that Checkpoint starts and its caller waits for before anything of the
// action executes (syncAhead): the launcher confines itself meanwhile.
// The log is held open from Open on, so that its fsync reports every
// write-back error since; one that fails fails every later sync.
// Each connection keeps the
// statements it has prepared, by their text (stmtcache.go): the same few
// dozen statements run for every action, and parsing them cost more than
// running most of them.
//
// # Invariants, and where each is kept
//
//   - A lease use is consumed in the same transaction that records the
//     action EXECUTING, durable before anything of the action may
//     execute (Checkpoint, and the wait it returns). The
//     transaction re-checks the lease — revocation, expiry, remaining
//     uses, the goal's state and revision — and that the session has no
//     action in flight (BUSY). A use is never given back.
//   - Triggers (migrate.go) refuse what no code path may do: refund a
//     lease use, un-revoke a lease, lower a goal revision, resume a
//     cancelled goal, move a finished or unknown action to another state,
//     change a stored capability report, or change or delete a goal
//     revision's document (earlier revisions stay as they were).
//   - goal_verdicts is an index of the log's verdict entries; the broker
//     trusts a verdict only after verifying its envelope, never the row.
//   - A lease matches only by byte equality of fingerprint, goal id and
//     current revision, and workspace (dev, ino, mnt_id); there are no
//     wildcards (MatchLease, which never returns a contract grant). A
//     lease the operator granted another egress list than its request
//     asked for is found by the request's fingerprint (AmendedLeases) and
//     used by the broker only if the submit's identity with that list has
//     the lease's fingerprint; the list is kept beside the lease
//     (lease_egress, migration 11), never changed. A
//     contract grant is matched by the broker (LiveContractGrants, then
//     the contract), and its use consumed by Checkpoint as a lease's.
//   - An action's result, its receipt link, the signed log entry and the
//     checkpoint over the new log are written in one transaction (LogTx),
//     so a terminal status always names its receipt and the stored log
//     never has an unanchored tail.
//   - An approval request is pending, approved, denied (denial_reported
//     once the denial was told to its requester) or expired. An expiry is
//     a row of approval_expiries (migration 7: SQLite cannot change the
//     CHECK of approval_requests.state, and rebuilding that table under
//     the leases and actions that reference it is not worth the risk); an
//     expired request keeps state 'pending' in approval_requests, and
//     triggers make it final: only a pending request expires, an expiry
//     is never changed or removed, an expired request is never decided
//     and gets no lease. requestStateAt is the one reading of the two.
//     A request expires when it is still pending RequestTTL (30 minutes)
//     after it was made, as of that moment, and for no other reason:
//     every write transaction that reads or decides a request's state
//     (RequestApproval, Approve, Deny, Decision, EnableContract for a
//     request) first expires those overdue (expireOverdue), so a
//     decision past the TTL is refused however long the broker was down;
//     reads (Request, Approvals, a journal opened read-only) write
//     nothing and ask `created_unix > liveSince` of a pending request, so
//     an overdue one reads expired before any write recorded it.
//     approval_requests.expired_unix mirrors the expiry (migration 10, by
//     trigger; a request is never inserted with one) only so that the
//     live pending requests have an index of their own.
//   - A contract grant enabled for a pending request (EnableContract)
//     settles it in the same transaction, and the oldest other live
//     pending requests the broker says the grant admits, up to its uses
//     (each checked again in the transaction): each is approved and a
//     row of approval_covers names the grant, which Decision answers as
//     its lease; triggers keep a cover final and allow one only for an
//     approved request, and never for one with a lease of its own (nor a
//     lease for a covered one).
//   - Actions found executing or running at start become unknown with
//     their uses spent and are never re-run (RecoverInterrupted); the
//     operator's classification is a statement (Resolve), never a result.
//   - A submit's call id is bound to its session and its request in the
//     transaction that records the approval request it raised or the
//     action it started (bindCall, called by RequestApproval and
//     Checkpoint), so no committed action exists whose call id a retry
//     could miss; a call id bound to an action is never bound again
//     (ErrCallStarted), and triggers keep the binding and the request.
//   - Stored values (identities, results) are wire's canonical CBOR and
//     are read back with wire.DecodeCanonical, as strictly as frames.
//
// Errors that are answers for a client are *wire.Error values with their
// stable codes; everything else is wrapped as "verb object: cause".
package journal
