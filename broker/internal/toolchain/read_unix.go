//go:build linux || darwin

package toolchain

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// maxFile bounds each marker file discovery reads (settings.toml, a
// version file, VERSION, release).
const maxFile = 64 << 10

// maxEntries bounds the names read from the one directory discovery
// lists (rustup's toolchains/, for a short toolchain name).
const maxEntries = 256

var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("too large")
)

// readSmall reads dir/rel, opened without following any symlink (dir
// must be canonical), O_NONBLOCK so that a FIFO cannot block: a regular
// file of at most maxFile bytes.
func readSmall(dir, rel string) ([]byte, error) {
	fd, err := openNoFollow(dir, rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), dir+"/"+rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errNotRegular
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, errTooLarge
	}
	return b, nil
}

// kindAt is the file type of dir/rel reached without following any
// symlink, or 0.
func kindAt(dir, rel string) uint32 {
	fd, err := openNoFollow(dir, rel, pathOnly)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return uint32(st.Mode) & unix.S_IFMT
}

// isDir reports whether dir/rel is a directory with no symlink on the way.
func isDir(dir, rel string) bool { return kindAt(dir, rel) == unix.S_IFDIR }

// isFile reports whether dir/rel is a regular file with no symlink on the
// way.
func isFile(dir, rel string) bool { return kindAt(dir, rel) == unix.S_IFREG }

// names lists at most maxEntries names of the directory dir/rel, opened
// without following any symlink.
func names(dir, rel string) ([]string, error) {
	fd, err := openNoFollow(dir, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), dir+"/"+rel)
	defer f.Close()
	return f.Readdirnames(maxEntries)
}
