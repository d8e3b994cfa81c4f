//go:build !linux

package lifecycle

import (
	"errors"

	"warrant/wire"
)

// Cgroups exists only on Linux.
type Cgroups struct{}

// DetectCgroups reports that there are no cgroups on this platform.
func DetectCgroups() (*Cgroups, error) { return nil, errors.New("cgroups exist only on Linux") }

// Dir is empty on this platform.
func (*Cgroups) Dir() string { return "" }

// BecomeSubreaper is a no-op outside Linux; the darwin lifecycle will
// track descendants by enumeration instead.
func BecomeSubreaper() error { return nil }

// Run refuses: supervision on this platform is not built yet, and warrant
// never runs anything it cannot supervise.
func Run(Spec) Result {
	return Result{Outcome: wire.KnownNotExecuted,
		Err: wire.Errorf(wire.CodeSandboxUnavailable, "supervision is not implemented on this platform yet")}
}
