package aliasscan

import (
	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// statAt stats name beneath dirfd without following a symlink.
func statAt(dirfd int, name string) (facts, error) {
	var st unix.Stat_t
	err := retry.EINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return factsOf(&st), err
}

// statFd stats the file open at fd.
func statFd(fd int) (facts, error) {
	var st unix.Stat_t
	err := retry.EINTR(func() error { return unix.Fstat(fd, &st) })
	return factsOf(&st), err
}

// factsOf widens the stat fields (narrower on macOS). macOS has no mount
// id: the device stands for it, so a mount of another filesystem is seen;
// one that reports the same device would not be.
func factsOf(st *unix.Stat_t) facts {
	dev := uint64(st.Dev)
	return facts{id: fileID{dev: dev, ino: st.Ino}, mode: uint32(st.Mode), nlink: uint64(st.Nlink), mnt: dev}
}
