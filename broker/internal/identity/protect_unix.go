//go:build linux || darwin

package identity

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// openDirAt opens the directory name relative to dirfd with dirOpenFlag
// (O_PATH on Linux: no permission on the directory itself is needed;
// macOS has no O_PATH, so it is opened for reading, as the workspace is,
// and a directory above a workspace that the broker cannot read fails
// the walk: the workspace is refused, fail closed). It follows symlinks:
// it opens the broker's own places and the ".." of a descriptor, never a
// path from a request.
func openDirAt(dirfd int, name string) (*os.File, error) {
	fd, err := openDirFD(dirfd, name)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openDirFD is openDirAt's bare descriptor, which the caller closes.
func openDirFD(dirfd int, name string) (int, error) {
	var fd int
	err := retry.EINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, dirOpenFlag|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return fd, nil
}
