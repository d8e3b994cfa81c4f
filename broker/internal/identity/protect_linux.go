package identity

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// openDirAt opens the directory name relative to dirfd (O_PATH: no
// permission on the directory itself is needed). It follows symlinks:
// it opens the broker's own places and the ".." of a descriptor, never a
// path from a request.
func openDirAt(dirfd int, name string) (*os.File, error) {
	var fd int
	err := retry.EINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
