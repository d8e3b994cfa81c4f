package toolchain

import "golang.org/x/sys/unix"

// pathOnly opens for fstat alone.
const pathOnly = unix.O_PATH

// openNoFollow opens rel beneath the canonical directory dir, refusing a
// symlink anywhere in either (and rel leaving dir).
func openNoFollow(dir, rel string, flags int) (int, error) {
	const resolve = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
	dfd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: resolve})
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	return unix.Openat2(dfd, rel, &unix.OpenHow{Flags: uint64(flags) | unix.O_CLOEXEC, Resolve: resolve | unix.RESOLVE_BENEATH})
}
