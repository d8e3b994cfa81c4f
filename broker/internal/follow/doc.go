// Package follow fans each action's redacted output out to the clients
// that follow it (the agent socket's Follow request), as the stream
// recorders release it (runner.Options.Live).
//
// # Bounds and back-pressure
//
// Publish never blocks and never waits for a follower: a slow or stalled
// client can neither hold up the action nor grow the broker's memory
// without bound. Each follower has a queue of at most QueueBytes; what
// does not fit is counted per stream and handed to the follower, once
// its queue has drained, as a gap ("N bytes not streamed") at the place
// it happened. Each action also holds its first EarlyBytes of output
// (all actions together at most MaxEarly), so that a follower attaching
// just after submit — the usual case, since the action starts as soon as
// it is accepted — is sent the output from its first byte; bytes released
// before a follower attached and not held are likewise a gap. An ended
// action's held output lingers for Linger, for a follower that attaches
// after a quick action already ended; then it is freed. The output is
// never lost by any of this: the receipt retains its head and tail, which
// `broker output` shows.
//
// The hub knows nothing of the journal: the broker tells it when an
// action has ended (End), after the end is recorded, and a follower
// learns it from Take.
package follow
