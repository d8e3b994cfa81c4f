package identity

import (
	"fmt"
	"os"
	"path"

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

// lstatBeneath: rel holds no ".." and is not absolute (the caller
// resolves those itself), so opening its directory with O_NOFOLLOW_ANY
// from the workspace stays beneath it; the last component is then
// examined without following it.
func lstatBeneath(ws *os.File, rel string) (mode uint32, target string, err error) {
	dir, base := path.Split(rel)
	if dir == "" {
		dir = "."
	}
	d, err := openNoFollowAny(int(ws.Fd()), dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return 0, "", err
	}
	defer d.Close()
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, "", &os.PathError{Op: "fstatat", Path: rel, Err: err}
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFLNK {
		return uint32(st.Mode) & unix.S_IFMT, "", nil
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(int(d.Fd()), base, buf)
	if err != nil {
		return 0, "", &os.PathError{Op: "readlinkat", Path: rel, Err: err}
	}
	return unix.S_IFLNK, string(buf[:n]), nil
}

func openFileBeneath(ws *os.File, rel string) (*os.File, error) {
	return openNoFollowAny(int(ws.Fd()), rel, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK)
}

// takeReadLease does nothing on macOS, which has no file leases.
func takeReadLease(int) {}

// releaseLease does nothing on macOS.
func releaseLease(int) {}

// leaseHeld is false on macOS: nothing is bound in place there.
func leaseHeld(int) bool { return false }

// dirOpenFlag is how openDirAt opens a directory: for reading (no O_PATH).
const dirOpenFlag = unix.O_RDONLY
