//go:build linux || darwin

package aliasscan

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// The walk's only syscalls, each relative to a directory descriptor;
// they exist on Linux and macOS alike (the stats are in dir_linux.go and
// dir_darwin.go). Listing is os.File.Readdirnames (getdents64 on Linux,
// getdirentries on macOS), which stats nothing.

// dirFlags opens a directory and nothing else: O_NOFOLLOW makes a
// symlink swapped in ELOOP, and O_DIRECTORY makes anything that is not a
// directory ENOTDIR before the file is opened, so a FIFO swapped in
// cannot block and a device's open is never called.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

const (
	typeMask = unix.S_IFMT
	typeDir  = unix.S_IFDIR
	typeReg  = unix.S_IFREG
	typeLnk  = unix.S_IFLNK
	typeFifo = unix.S_IFIFO
	typeSock = unix.S_IFSOCK
	typeChr  = unix.S_IFCHR
	typeBlk  = unix.S_IFBLK
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
