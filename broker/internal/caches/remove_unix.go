//go:build linux || darwin

package caches

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// maxDepth bounds the directory levels Remove descends (one descriptor
// each); a deeper tree is left in place and reported.
const maxDepth = 1024

// removeBeneath removes name, a directory beneath root, and everything in
// it.
func removeBeneath(root, name string) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(fd)
	return removeAt(fd, name, name, 0)
}

// removeAt removes name (rel beneath the cache root, for messages)
// beneath the directory dirfd: unlinked if it is not
// a directory (a symlink is removed, never followed); otherwise opened
// with O_NOFOLLOW, given its owner's rwx back through its descriptor (a
// read-only module cache), emptied and removed.
func removeAt(dirfd int, name, rel string, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	switch {
	case err == nil || err == unix.ENOENT:
		return nil
	case err != unix.EISDIR && err != unix.EPERM: // EPERM: a directory, on macOS
		return &os.PathError{Op: "unlink", Path: rel, Err: err}
	case depth >= maxDepth:
		return fmt.Errorf("%s: the tree is deeper than %d levels; remove the rest by hand", rel, maxDepth)
	}
	if err := ownerRWX(dirfd, name); err != nil {
		return &os.PathError{Op: "chmod", Path: rel, Err: err}
	}
	var fd int
	err = retry.EINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if err := removeAt(fd, n, rel+"/"+n, depth+1); err != nil {
				return err
			}
		}
		if err != nil {
			break // io.EOF, or a read error that the rmdir below reports
		}
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil {
		return &os.PathError{Op: "rmdir", Path: rel, Err: err}
	}
	return nil
}
