// Package server is the broker's socket front: two unix stream sockets,
// agent.sock and operator.sock, carrying length-prefixed canonical CBOR
// frames (wire.ReadFrame, wire.WriteFrame), each answered by its own
// handler. The channel decides which message types are allowed
// (wire.AgentChannel, wire.OperatorChannel), so an agent can never reach
// an operator verb by framing. A request type listed in Options.Streams
// (the agent's Follow) is answered by several frames and then a final
// reply; each frame, like every reply, must be taken by the peer within
// the idle timeout, or the connection is closed.
//
// # Threat model
//
// Peers are same-uid processes that may be hostile or confused. Every
// connection's SO_PEERCRED uid must equal the broker's; frames are capped
// (wire.MaxAgentFrame) and must complete within the idle timeout;
// connections per socket are bounded (pool.go): a new connection to a
// full socket evicts the one idle longest (a BUSY notice, then close; a
// request it was reading is never handled), so idle connections cannot
// lock the operator out; BUSY only when every connection is in a
// request, which the handlers bound (a wait's budget is capped); a
// malformed or truncated frame gets one ARGUMENTS_INVALID reply and the
// connection is closed; a panicking handler, and an answer (or stream
// frame) that fails validation, is logged and answered with INTERNAL, and
// the daemon keeps serving (the connection too: it is still in step). The sockets' directory is 0700 and each
// socket 0600. A same-uid peer that opens connections faster than others
// send requests can still push out a connection idle between requests
// (never one in a request); broker/client reconnects when it finds the
// notice pending before a request, and a request sent as the notice came
// is answered BUSY by it, never handled.
//
// # Socket activation
//
// Started by systemd with its sockets (sd_listen_fds(3): LISTEN_PID is
// this process, LISTEN_FDS of them from descriptor 3), Serve serves on
// those instead of binding its own, each matched to agent.sock or
// operator.sock by the path it is bound to, never by its position; a
// passed descriptor that is not a unix stream listener on one of those
// two paths, or a path left without one, is refused and nothing is
// served. The LISTEN_* variables are removed at once, and the socket
// files are left in place at exit: the socket unit owns them
// (contrib/systemd/warrant.socket).
package server
