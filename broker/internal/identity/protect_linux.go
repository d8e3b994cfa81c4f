package identity

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"warrant/internal/fsid"
)

// nodeAt measures the directory name (a run of "../", or "" for dirfd
// itself) resolves to from dirfd, with the mount it was reached by
// (fsid.StatxMount).
func nodeAt(dirfd int, name string) (node, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT | unix.AT_STATX_DONT_SYNC
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	const want = unix.STATX_TYPE | unix.STATX_INO
	sx, err := fsid.StatxMount(dirfd, name, flags, want)
	switch {
	case err != nil:
		return node{}, fmt.Errorf("statx %s: %w", orDot(name), err)
	case sx.Mask&want != want:
		return node{}, errors.New("statx reports no type or inode")
	case sx.Mode&unix.S_IFMT != unix.S_IFDIR:
		return node{}, errors.New("not a directory")
	}
	return node{dirKey{unix.Mkdev(sx.Dev_major, sx.Dev_minor), sx.Ino}, sx.Mnt_id}, nil
}
