package contract

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// openBeneath opens rel beneath dir. macOS has no openat2: O_NOFOLLOW_ANY
// (macOS 11+) refuses a symlink in any component, and rel is already
// relative and free of ".." (cleanRel), which keeps it beneath dir.
func openBeneath(dir *os.File, rel string, flags int) (*os.File, error) {
	var fd int
	err := retry.EINTR(func() (err error) {
		fd, err = unix.Openat(int(dir.Fd()), rel, flags|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// lookupFlags open an object only to learn its type (no read access
// needed); readFlags open a file to read it without blocking on a FIFO.
const (
	lookupFlags = unix.O_EVTONLY | unix.O_NONBLOCK
	readFlags   = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
)
