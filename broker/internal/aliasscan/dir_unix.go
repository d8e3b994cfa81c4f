//go:build linux || darwin

package aliasscan

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// The walk's only syscalls, each relative to a directory descriptor;
// they exist on Linux and macOS alike. Listing is os.File.Readdirnames
// (getdents64 on Linux, getdirentries on macOS), which stats nothing.

// dirFlags opens a directory and nothing else: O_NOFOLLOW makes a
// symlink swapped in ELOOP, and O_DIRECTORY makes anything that is not a
// directory ENOTDIR before the file is opened, so a FIFO swapped in
// cannot block and a device's open is never called.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

const (
	typeMask = unix.S_IFMT
	typeDir  = unix.S_IFDIR
	typeReg  = unix.S_IFREG
)

var (
	errNotExist = unix.ENOENT
	errLoop     = unix.ELOOP
	errNotDir   = unix.ENOTDIR
)

// openDirAt opens the directory name beneath dirfd without following a
// symlink.
func openDirAt(dirfd int, name string) (*os.File, error) {
	var fd int
	err := retry.EINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, dirFlags, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// statAt stats name beneath dirfd without following a symlink.
func statAt(dirfd int, name string) (facts, error) {
	var st unix.Stat_t
	err := retry.EINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return factsOf(&st), err
}

// statFd stats the file open at fd.
func statFd(fd int) (facts, error) {
	var st unix.Stat_t
	err := retry.EINTR(func() error { return unix.Fstat(fd, &st) })
	return factsOf(&st), err
}

// factsOf widens the platform's stat fields (narrower on macOS).
func factsOf(st *unix.Stat_t) facts {
	return facts{id: fileID{dev: uint64(st.Dev), ino: st.Ino}, mode: uint32(st.Mode), nlink: uint64(st.Nlink)}
}
