// Package mcp is `broker mcp`: a Model Context Protocol server on one
// stream (stdin/stdout), built on the official Go SDK, through which an
// agent (Claude Code, Codex, Cursor, any MCP client) runs local programs
// under warrant (docs/agents.md). It is an agent client of the broker and
// nothing more: it holds a client.Agent, the agent.sock half of a client,
// which has no way to reach operator.sock.
//
// # Tools
//
//	run      submit an action and wait up to wait_ms (capped) for its end; the
//	         object `broker run --json` prints is its result (with the lease,
//	         uses left and contract its submit used: conn.used). When a human must
//	         approve, it returns at once: approval_required, the request id, the
//	         exact `broker approve` command, and the sentence that a human
//	         approves outside the agent. With a call_id, a run repeated on
//	         the same session never starts the command twice: it answers the
//	         first run's action (or its pending approval); broker package doc.
//	         With egress, the agent proposes network access (host:port
//	         entries, preset names); approval_required shows the exact list
//	         the human approves, who may grant another (approve --egress)
//	wait     wait on a handle, or on an approval this connection asked for:
//	         once approved, the same request is submitted again and runs.
//	         With stdout_from/stderr_from (run too), it pages the redacted
//	         output: up to 32 KiB of each stream from those offsets, the next
//	         offsets, the ranges the broker no longer held, and whether the
//	         stream is complete (page.go; the broker keeps what a page did
//	         not take: broker/internal/follow)
//	status   the state of an action, and its result once it ended
//	cancel   ask the broker to end an action (nothing is undone)
//	receipt  one receipt's readable summary beside its verification status,
//	         read from the log as `broker receipts show` reads it
//	goal_status  the goal's document, state and latest verdict under its
//	         current revision (docs/goals.md)
//	goal_verify  the broker's evidence oracle judges the goal now; its verdict
//	         is signed into the receipt log, as every verdict is
//
// It serves every protocol revision the SDK does, up to 2026-07-28 (the
// stateless model); the SDK has no tasks extension, so a run that waits
// for a human or runs long returns and the agent calls wait.
//
// Each has typed input and output schemas and annotations that say what
// it does: run, wait and cancel start or end programs, status, receipt,
// goal_status and goal_verify only read (goal_verify changes nothing of
// the host or the goal; the record of its verdict is the log's, not an
// effect on the agent's world); none reaches beyond the host
// (openWorldHint false). run takes the goal's step.
//
// # Invariants
//
//   - Agent only. Nothing here approves, denies, revokes, lists or
//     resolves; a test keeps operator calls out of this package's code.
//     Elicitation (a client that supports it is shown the request while
//     wait waits for approval) only nudges a human toward the operator
//     channel: its answer is logged and ignored.
//   - Bounded. Every wait is at most maxWait, under the request timeouts
//     MCP clients default to; running out is wait_timeout, not a failure.
//     Pending approvals per connection are bounded (maxPending).
//   - Errors are tool results. A refusal is a result with isError, its
//     text beginning with the stable code and the broker's sentence;
//     arguments that do not match the schema (extra fields, wrong types,
//     a huge argv) are ARGUMENTS_INVALID the same way, and a handler
//     panic is INTERNAL: the server keeps serving. Only malformed
//     protocol gets a protocol error (an unknown tool or method; on the
//     stream, a line that is not JSON, not one JSON-RPC message, or over
//     maxFrame), and the session goes on (stream.go).
//   - The stream carries protocol frames only; logs go to the log writer
//     (stderr for `broker mcp`).
//   - One session per connection unless configured: the broker runs one
//     action at a time per session (BUSY otherwise).
//
// # Threat model
//
// The MCP client is the agent, with the trust of anything on agent.sock:
// none. Its arguments reach the broker as an ActionRequest, where
// admission, identity, leases and the sandbox apply as to any other
// agent; the workspace is fixed when the server starts, not chosen per
// call. Tool results carry only what the agent socket already shows (the
// redacted output: its bounded projection, or pages of it) and the
// receipt log, which the same uid can read anyway. Approval is always a human at the operator
// channel: an agent that forges an elicitation answer, or calls a tool
// named approve, gains nothing.
package mcp
