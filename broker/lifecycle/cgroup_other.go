//go:build !linux

package lifecycle

import "errors"

// Cgroups exists only on Linux.
type Cgroups struct{}

// DetectCgroups reports that there are no cgroups on this platform.
func DetectCgroups(string) (*Cgroups, error) { return nil, errors.New("cgroups exist only on Linux") }

// Dir is empty on this platform.
func (*Cgroups) Dir() string { return "" }

// Dirs is empty on this platform.
func (*Cgroups) Dirs() []string { return nil }

// Remove does nothing on this platform.
func (*Cgroups) Remove() {}

// EndLeftovers finds none on this platform.
func (*Cgroups) EndLeftovers() ([]Leftover, error) { return nil, nil }

// Enforcement is nothing on this platform.
func (*Cgroups) Enforcement() Enforcement { return Enforcement{} }

// Describe is empty on this platform.
func (*Cgroups) Describe() string { return "" }

// EndOrigin finds nothing on this platform, where no Origin is recorded.
func EndOrigin(string, Origin) (Leftover, bool) { return Leftover{}, false }
