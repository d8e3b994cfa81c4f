//go:build !linux

package protect

import "os"

// Take records nothing where openat2 does not exist (macOS): the receipt
// then claims nothing about protected paths.
func Take(*os.File) *Snapshot { return nil }

// Again is nil for a nil snapshot.
func (s *Snapshot) Again() *Snapshot { return nil }

// Release does nothing for a nil snapshot.
func (s *Snapshot) Release() {}
