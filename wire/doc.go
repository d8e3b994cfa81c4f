// Package wire defines every message that crosses a trust boundary in
// warrant, and the only codec allowed to read or write them.
//
// Two channels use it:
//
//   - agent/operator ↔ broker: length-prefixed frames on agent.sock and
//     operator.sock (AgentRequest, OperatorRequest, BrokerReply); every
//     request has one reply, except Follow, answered by OutputChunk frames
//     and then the final Status;
//   - broker → launcher: one SpawnRequest on an inherited SOCK_SEQPACKET
//     socket, answered by Refused, or by Ready; after Ready the broker
//     sends one Proceed once the action is durably EXECUTING, and the
//     launcher executes, or answers ExecFailed.
//
// # Encoding
//
// Every message is one CBOR data item (RFC 8949): a two-entry map
// {"type": text, "body": map}. Encoding is core deterministic (§4.2.1), so
// equal values always give equal bytes and digests over them are stable.
// Schemas for all messages are in warrant.cddl (RFC 8610) and are checked
// against the golden vectors in testdata/vectors.
//
// # Strictness
//
// Decoding is closed and canonical. A frame is rejected when it has
// duplicate map keys, unknown fields, indefinite lengths, tags, invalid
// UTF-8, NUL bytes in any text, trailing bytes, nesting deeper than
// maxDepth, arrays or maps beyond their caps, an unknown enum value, or a
// message type that does not belong to the channel. Finally, the decoded
// value is re-encoded and must equal the input byte for byte: a value has
// exactly one accepted encoding. On any error the decoder returns no value.
//
// # Threat model
//
// The bytes come from a peer that may be hostile: an agent process with the
// operator's uid, or (for the launcher) a compromised broker. Nothing here
// trusts lengths, counts or enum values it has not checked, and no
// allocation is driven by an unchecked length: frames are capped before
// they are read (MaxAgentFrame, MaxLauncherFrame).
//
// This package imports neither golang.org/x/sys/unix nor unsafe; a test
// enforces that.
package wire
