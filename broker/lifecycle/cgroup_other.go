//go:build !linux

package lifecycle

import "errors"

// Cgroups exists only on Linux.
type Cgroups struct{}

// DetectCgroups reports that there are no cgroups on this platform.
func DetectCgroups(string) (*Cgroups, error) { return nil, errors.New("cgroups exist only on Linux") }

// Dir is empty on this platform.
func (*Cgroups) Dir() string { return "" }

// Remove does nothing on this platform.
func (*Cgroups) Remove() {}

// Leftovers finds none on this platform.
func (*Cgroups) Leftovers() ([]Leftover, error) { return nil, nil }
