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

// Warm does nothing on this platform, where nothing is launched.
type Warm struct{}

// NewWarm returns a nil Warm.
func NewWarm(string, *Cgroups) (*Warm, error) { return nil, nil }

// Close does nothing.
func (*Warm) Close() {}

// Namespaces says why the protected paths cannot be bound read-only.
func Namespaces(string) string { return "nothing is launched on this platform" }

// UserNamespaces is false: nothing is launched.
func UserNamespaces() bool { return false }

// noEgress: nothing is launched on this platform.
const noEgress = "nothing is launched on this platform"
