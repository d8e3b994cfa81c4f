// Package server is the broker's socket front: two unix stream sockets,
// agent.sock and operator.sock, carrying length-prefixed canonical CBOR
// frames (wire.ReadFrame, wire.WriteFrame), each answered by its own
// handler. The channel decides which message types are allowed
// (wire.AgentChannel, wire.OperatorChannel), so an agent can never reach
// an operator verb by framing.
//
// # Threat model
//
// Peers are same-uid processes that may be hostile or confused. Every
// connection's SO_PEERCRED uid must equal the broker's; frames are capped
// (wire.MaxAgentFrame) and must complete within the idle timeout;
// connections per socket are bounded (BUSY beyond); a malformed or
// truncated frame gets one ARGUMENTS_INVALID reply and the connection is
// closed; a panicking handler is answered with INTERNAL and the daemon
// keeps serving. The sockets' directory is 0700 and each socket 0600.
package server
