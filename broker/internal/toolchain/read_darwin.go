package toolchain

import (
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// pathOnly opens for fstat alone (macOS has no O_PATH; a non-blocking
// read-only open does not block on a FIFO).
const pathOnly = unix.O_RDONLY | unix.O_NONBLOCK

// openNoFollow opens rel beneath the canonical directory dir, refusing a
// symlink anywhere in either (O_NOFOLLOW_ANY) and rel leaving dir.
func openNoFollow(dir, rel string, flags int) (int, error) {
	if path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "/../") {
		return -1, syscall.EXDEV
	}
	return unix.Open(path.Join(dir, rel), flags|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC, 0)
}
