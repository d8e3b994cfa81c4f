//go:build linux && !amd64

package metadata

import (
	"fmt"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// decode refuses every call: the launcher has seccomp programs for amd64
// only (and refuses to run elsewhere), so no notification is expected.
func decode(*caller, *seccompData) (*call, unix.Errno) { return nil, unix.EPERM }

// writeOpen knows no call here, for the same reason.
func writeOpen(*seccompData) (openCall, bool) { return openCall{}, false }

// counted knows no call here, for the same reason.
func counted(*seccompData) (unix.Errno, *wire.Denial, bool) { return 0, nil, false }

const (
	sysInotifyAddWatch = -1
	auditArch          = 0
	sysSocket          = -1
	sysConnect         = -1
)

func callName(nr int32) string { return fmt.Sprintf("syscall %d", nr) }
