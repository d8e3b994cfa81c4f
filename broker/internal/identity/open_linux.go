package identity

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// openat2 retries EAGAIN, which RESOLVE_* lookups return when a rename
// raced with them, and EINTR, within internal/retry's bound.
func openat2(dirfd int, path string, how *unix.OpenHow) (*os.File, error) {
	var fd int
	err := retry.EAGAIN(func() (err error) { fd, err = unix.Openat2(dirfd, path, how); return err })
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openFileNoFollow opens the regular file at the absolute path p for
// reading without following any symlink on the way. O_NONBLOCK keeps a
// FIFO planted at p from blocking the broker; fsid refuses it afterwards.
func openFileNoFollow(p string) (*os.File, error) {
	return openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// openDirNoFollow opens the directory at the absolute path p (O_PATH)
// without following any symlink on the way.
func openDirNoFollow(p string) (*os.File, error) {
	return openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// openBeneath opens the directory rel beneath the workspace ws the way the
// launcher will: the kernel refuses any escape, symlink, magic link or
// mount crossing on the way.
func openBeneath(ws *os.File, rel string) (*os.File, error) {
	return openat2(int(ws.Fd()), rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
	})
}

// lstatBeneath opens rel beneath the workspace ws without following any
// symlink on the way (RESOLVE_BENEATH: no ".." above it, no absolute
// path); a trailing symlink is opened itself (O_PATH|O_NOFOLLOW). It
// returns the object's type bits and, for a symlink, its target.
func lstatBeneath(ws *os.File, rel string) (mode uint32, target string, err error) {
	f, err := openat2(int(ws.Fd()), rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, "", &os.PathError{Op: "fstat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return st.Mode & unix.S_IFMT, "", nil
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(int(f.Fd()), "", buf)
	if err != nil {
		return 0, "", &os.PathError{Op: "readlinkat", Path: rel, Err: err}
	}
	if n == len(buf) {
		return 0, "", &os.PathError{Op: "readlinkat", Path: rel, Err: unix.ENAMETOOLONG}
	}
	return unix.S_IFLNK, string(buf[:n]), nil
}

// openFileBeneath opens the regular file rel beneath the workspace ws for
// reading, without following any symlink and without leaving it.
func openFileBeneath(ws *os.File, rel string) (*os.File, error) {
	return openat2(int(ws.Fd()), rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// takeReadLease takes a read lease on fd, which succeeds only while no
// one has the file open for writing and only for its owner (or with
// CAP_LEASE); a failure leaves the file unleased (Leased says so).
func takeReadLease(fd int) { unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK) }

// releaseLease gives the read lease on fd up.
func releaseLease(fd int) { unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK) }

// leaseHeld reports whether the read lease on fd is still held.
func leaseHeld(fd int) bool {
	v, err := unix.FcntlInt(uintptr(fd), unix.F_GETLEASE, 0)
	return err == nil && v == unix.F_RDLCK
}

// dirOpenFlag is how openDirAt opens a directory: O_PATH.
const dirOpenFlag = unix.O_PATH
