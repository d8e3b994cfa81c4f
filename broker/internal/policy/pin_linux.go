package policy

import (
	"golang.org/x/sys/unix"

	"warrant/wire"
)

// pin measures the object at the absolute path p, opened without
// following any symlink (the launcher opens it the same way).
func pin(p string) (wire.PathPin, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return wire.PathPin{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return wire.PathPin{}, err
	}
	return wire.PathPin{Path: p, Dev: st.Dev, Ino: st.Ino}, nil
}
