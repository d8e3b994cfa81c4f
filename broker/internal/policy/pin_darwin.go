package policy

import (
	"golang.org/x/sys/unix"

	"warrant/wire"
)

// pin measures the object at the absolute path p, opened without
// following any symlink (O_NOFOLLOW_ANY).
func pin(p string) (wire.PathPin, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return wire.PathPin{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return wire.PathPin{}, err
	}
	return wire.PathPin{Path: p, Dev: uint64(st.Dev), Ino: st.Ino}, nil
}
