// Package cardtext is a sandbox policy in a person's words: the
// limitations text an approval request carries beside the identity
// (Limitations, one sentence a line, with Protection, the host's
// sentence on the protected paths), and the short card's rows (Brief,
// which knows a line only when it would write it word for word and
// shows any other whole), an egress grant's entries (EgressList,
// EgressLimit) and a profile's limits (ProfileLimits). The broker writes
// the text; the thin client condenses it, which is why this is not part
// of broker/internal/policy: the client links these words, not the
// policy's walk of /etc.
package cardtext
