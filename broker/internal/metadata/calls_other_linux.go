//go:build linux && !amd64

package metadata

import "golang.org/x/sys/unix"

// decode refuses every call: the launcher has seccomp programs for amd64
// only (and refuses to run elsewhere), so no notification is expected.
func decode(*caller, *seccompData) (*call, unix.Errno) { return nil, unix.EPERM }
