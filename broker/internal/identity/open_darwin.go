package identity

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// macOS has no openat2. O_NOFOLLOW_ANY (macOS 11+) refuses a symlink in
// any component of the path, which gives RESOLVE_NO_SYMLINKS; the cwd is
// already free of ".." (wire.CheckRelPath), which gives RESOLVE_BENEATH;
// and a device change between the workspace and the cwd stands in for
// RESOLVE_NO_XDEV (a mount on an intermediate component with the same
// device is not detected; the launcher re-checks (dev, ino) anyway).

func openNoFollowAny(dirfd int, p string, flags int) (*os.File, error) {
	var fd int
	err := retry.EINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, p, flags|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

func openFileNoFollow(p string) (*os.File, error) {
	return openNoFollowAny(unix.AT_FDCWD, p, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK)
}

func openDirNoFollow(p string) (*os.File, error) {
	return openNoFollowAny(unix.AT_FDCWD, p, unix.O_RDONLY|unix.O_DIRECTORY)
}

func openBeneath(ws *os.File, rel string) (*os.File, error) {
	f, err := openNoFollowAny(int(ws.Fd()), rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	var a, b unix.Stat_t
	if err := unix.Fstat(int(ws.Fd()), &a); err != nil {
		f.Close()
		return nil, fmt.Errorf("fstat workspace: %w", err)
	}
	if err := unix.Fstat(int(f.Fd()), &b); err != nil {
		f.Close()
		return nil, fmt.Errorf("fstat %s: %w", rel, err)
	}
	if a.Dev != b.Dev {
		f.Close()
		return nil, &os.PathError{Op: "openat", Path: rel, Err: unix.EXDEV}
	}
	return f, nil
}
