//go:build linux || darwin

package identity

import (
	"os"

	"golang.org/x/sys/unix"
)

// The read-back of a goal's files (broker/internal/goals) opens them the
// way resolution opens a workspace executable: the workspace by its
// absolute path without following any symlink, then the file beneath it
// by descriptor (openat2 RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS on
// Linux, O_NOFOLLOW_ANY on macOS), O_NONBLOCK so that a FIFO does not
// block the broker.

// OpenWorkspace opens the directory at the absolute path p without
// following any symlink on the way.
func OpenWorkspace(p string) (*os.File, error) { return openDirNoFollow(p) }

// OpenFileBeneath opens rel beneath the workspace ws for reading, without
// following any symlink and without leaving it. The caller checks that
// what it opened is a regular file.
func OpenFileBeneath(ws *os.File, rel string) (*os.File, error) { return openFileBeneath(ws, rel) }

// HoldWorkspace returns a descriptor of its own for the resolved
// workspace, valid after r is closed: the broker reads a step's outputs
// back beneath the very directory the action ran in.
func (r *Resolved) HoldWorkspace() (*os.File, error) {
	fd, err := unix.FcntlInt(r.workspace.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: r.workspace.Name(), Err: err}
	}
	return os.NewFile(uintptr(fd), r.workspace.Name()), nil
}
