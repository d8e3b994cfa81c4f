package identity

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// nodeAt measures the directory name (a run of "../", or "" for dirfd
// itself) resolves to from dirfd, with the mount it was reached by: the
// unique mount id where the kernel has one (6.8+), else the mount id.
func nodeAt(dirfd int, name string) (node, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT | unix.AT_STATX_DONT_SYNC
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	const want = unix.STATX_TYPE | unix.STATX_INO
	var sx unix.Statx_t
	err := retry.EINTR(func() error {
		return unix.Statx(dirfd, name, flags, want|unix.STATX_MNT_ID_UNIQUE|unix.STATX_MNT_ID, &sx)
	})
	switch {
	case err != nil:
		return node{}, fmt.Errorf("statx %s: %w", orDot(name), err)
	case sx.Mask&want != want || sx.Mask&(unix.STATX_MNT_ID_UNIQUE|unix.STATX_MNT_ID) == 0:
		return node{}, errors.New("statx reports no type, inode or mount id (Linux before 5.8, or a sandbox around the broker)")
	case sx.Mode&unix.S_IFMT != unix.S_IFDIR:
		return node{}, errors.New("not a directory")
	}
	return node{dirKey{unix.Mkdev(sx.Dev_major, sx.Dev_minor), sx.Ino}, sx.Mnt_id}, nil
}
