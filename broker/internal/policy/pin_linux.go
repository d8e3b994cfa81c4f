package policy

import "golang.org/x/sys/unix"

// openNoSymlinks opens p as a path only, refusing a symlink anywhere in it.
func openNoSymlinks(p string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
}
