//go:build linux || darwin

package policy

import (
	"golang.org/x/sys/unix"

	"warrant/wire"
)

// pin measures the object at the absolute path p, opened without
// following any symlink (openNoSymlinks; the launcher opens it the same
// way).
func pin(p string) (wire.PathPin, error) {
	fd, err := openNoSymlinks(p)
	if err != nil {
		return wire.PathPin{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return wire.PathPin{}, err
	}
	return wire.PathPin{Path: p, Dev: uint64(st.Dev), Ino: st.Ino}, nil // Dev is int32 on macOS
}
