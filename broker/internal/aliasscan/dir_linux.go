package aliasscan

import (
	"errors"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// statx is asked for what the walk reads; the mount id says which mount
// a name is on (Linux 5.8, older than any kernel with Landlock).
// AT_NO_AUTOMOUNT: an automount point is stat'ed, not triggered.
const (
	statxMask  = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_NLINK | unix.STATX_INO | unix.STATX_MNT_ID
	statxFlags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT
)

var errNoMountID = errors.New("the kernel does not report mount ids (statx STATX_MNT_ID)")

// statAt stats name beneath dirfd without following a symlink.
func statAt(dirfd int, name string) (facts, error) {
	var st unix.Statx_t
	err := retry.EINTR(func() error { return unix.Statx(dirfd, name, statxFlags, statxMask, &st) })
	return factsOf(&st, err)
}

// statFd stats the file open at fd (O_PATH included).
func statFd(fd int) (facts, error) {
	var st unix.Statx_t
	err := retry.EINTR(func() error { return unix.Statx(fd, "", statxFlags|unix.AT_EMPTY_PATH, statxMask, &st) })
	return factsOf(&st, err)
}

func factsOf(st *unix.Statx_t, err error) (facts, error) {
	if err != nil {
		return facts{}, err
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return facts{}, errNoMountID // without it a mount point would pass unseen
	}
	return facts{
		id:    fileID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino},
		mode:  uint32(st.Mode),
		nlink: uint64(st.Nlink),
		mnt:   st.Mnt_id,
	}, nil
}
