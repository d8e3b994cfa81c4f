package identity

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// nodeAt measures the directory name (a run of "../", or "" for dirfd
// itself) resolves to from dirfd. macOS's stat reports no mount (0): a
// walk ends where ".." has the same (dev, ino).
func nodeAt(dirfd int, name string) (node, error) {
	var st unix.Stat_t
	err := retry.EINTR(func() error {
		if name == "" {
			return unix.Fstat(dirfd, &st)
		}
		return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return node{}, fmt.Errorf("stat %s: %w", orDot(name), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return node{}, errors.New("not a directory")
	}
	return node{dirKey: dirKey{uint64(st.Dev), st.Ino}}, nil
}
