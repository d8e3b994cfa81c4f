package contract

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// openBeneath opens rel beneath dir the way the launcher opens a cwd:
// openat2 with RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS, so the kernel
// refuses "..", an absolute path, and a symlink anywhere on the way, the
// last component included.
func openBeneath(dir *os.File, rel string, flags int) (*os.File, error) {
	how := &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	err := retry.EAGAIN(func() (err error) { fd, err = unix.Openat2(int(dir.Fd()), rel, how); return err })
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// lookupFlags open an object only to learn its type (no read access
// needed); readFlags open a file to read it without blocking on a FIFO.
const (
	lookupFlags = unix.O_PATH
	readFlags   = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
)
