//go:build !linux && !darwin

package lifecycle

import "warrant/wire"

// BecomeSubreaper is a no-op: nothing is ever launched on this platform.
func BecomeSubreaper() error { return nil }

// Run refuses: warrant supervises actions only on Linux and macOS, and
// never runs anything it cannot supervise.
func Run(Spec) Result {
	return Result{Outcome: wire.KnownNotExecuted,
		Err: wire.Errorf(wire.CodeSandboxUnavailable, "supervision is not implemented on this platform")}
}
