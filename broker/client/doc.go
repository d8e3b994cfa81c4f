// Package client is the Go client of a warrant broker, for agents and for
// the broker's own CLI. It speaks the wire protocol over the state
// directory's agent.sock (submit, query, wait, cancel, goals, approval_wait,
// and follow: an action's live output on a connection of its own) and
// operator.sock (approve, deny, revoke, list, resolve, goal state).
//
// Every refusal comes back as a *wire.Error (use errors.As), carrying a
// stable code and a sentence. The client adds no authority of its own: the
// broker checks the peer's uid on every connection, and a same-uid agent
// that dials operator.sock is the operator as far as the kernel can tell
// (docs/architecture.md §1).
package client
