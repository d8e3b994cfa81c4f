package rmtree

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// ownerRWX gives the directory name beneath dirfd its owner's read,
// write and search bits, keeping the rest, through a descriptor opened
// without following a symlink: fchmodat2(AT_EMPTY_PATH) on Linux 6.6+,
// else chmod of its /proc/self/fd link, which names that object.
func ownerRWX(dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&0o700 == 0o700 {
		return nil
	}
	mode := st.Mode&0o7777 | 0o700
	if err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH); err != unix.EOPNOTSUPP && err != unix.ENOSYS {
		return err
	}
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
}
