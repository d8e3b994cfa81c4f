// Package client is the Go client of a warrant broker, for agents and for
// the broker's own CLI. It speaks the wire protocol over the state
// directory's agent.sock (submit, query, wait, cancel, goals: create,
// revise, show, verify, list; approval_wait, and follow: an action's live
// output on a connection of its own) and operator.sock (approve, deny,
// revoke, list, resolve, goal state, the operator's statements about
// goal steps).
//
// Every refusal comes back as a *wire.Error (use errors.As), carrying a
// stable code and a sentence.
//
// # Bounds
//
// No request waits without bound. Each reply must come within the
// request's own wait budget plus the reply timeout (DefaultReplyTimeout,
// 30 s, the broker's own bound on a client's frame; $WARRANT_REPLY_TIMEOUT
// overrides it, for tests and slow hosts; a value that is not a positive
// duration stops Dial). Wait sends a long wait as polls of at most 10 s,
// each answered by a live broker at its budget however long the action
// runs, so only a broker that has stopped answering is given up on. The
// Context variants are abandoned at once when their context is done.
// Nothing is sent to a broker whose process the kernel shows stopped
// (SO_PEERCRED pid, /proc/PID/stat "T"; Linux). A failure says whether
// the broker may have acted: a request not sent (no connection, a
// stopped broker, interrupted first, a frame not wholly written, which
// the broker never acts on) is IO_FAILED; a sent one with no answer is
// IO_FAILED when it changes nothing (query, wait, list, approval wait)
// and otherwise an uncoded error saying the broker may have carried it
// out — for a submit, an accepted action whose outcome the caller cannot
// know; for an approve or deny, a decision that may have been made. A sent
// request given up on (its timeout passed, or its context done) names a
// broker process the kernel shows stopped by then.
// A connection with unsolicited bytes pending (the broker's notice that
// it closed an idle connection) is not reused, and a request answered
// BUSY on a connection the broker then closes (let go unhandled: evicted
// as idle, or refused with every connection in a request) is sent once
// more on a new one. The client adds no authority of its own: the
// broker checks the peer's uid on every connection, and a same-uid agent
// that dials operator.sock is the operator as far as the kernel can tell
// (docs/architecture.md §1).
package client
