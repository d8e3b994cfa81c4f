package rmtree

import "golang.org/x/sys/unix"

// ownerRWX gives the directory name beneath dirfd its owner's read,
// write and search bits, keeping the rest, without following a symlink
// (fchmodat with AT_SYMLINK_NOFOLLOW).
func ownerRWX(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&0o700 == 0o700 || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	return unix.Fchmodat(dirfd, name, uint32(st.Mode&0o7777|0o700), unix.AT_SYMLINK_NOFOLLOW)
}
