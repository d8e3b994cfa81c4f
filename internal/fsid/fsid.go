package fsid

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
	"warrant/wire"
)

// MaxFileSize is the largest executable or interpreter warrant will hash
// (docs/architecture.md §2.2).
const MaxFileSize = 512 << 20

// ErrTooLarge is returned for files over MaxFileSize.
var ErrTooLarge = errors.New("file exceeds 512 MiB")

// File returns the identity of the regular file open at fd, recorded under
// path, including the SHA-256 of its content read with pread (the file
// offset is not moved). The content must be exactly the fstat size.
func File(fd int, path string) (wire.FileIdentity, error) {
	id, err := Stat(fd, path)
	if err != nil {
		return id, err
	}
	return id, Digest(fd, &id)
}

// Digest sets id.SHA256 to the SHA-256 of the content of the file open at
// fd, read with pread; the content must be exactly id.Size bytes.
func Digest(fd int, id *wire.FileIdentity) error {
	h := sha256.New()
	if err := CopyExact(h, fd, int64(id.Size)); err != nil {
		return fmt.Errorf("hash %s: %w", id.Path, err)
	}
	id.SHA256 = h.Sum(nil)
	return nil
}

// Stat returns the identity of the regular file open at fd without its
// digest.
func Stat(fd int, path string) (wire.FileIdentity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return wire.FileIdentity{}, fmt.Errorf("fstat %s: %w", path, err)
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return wire.FileIdentity{}, fmt.Errorf("%s: not a regular file", path)
	}
	if st.Size < 0 || st.Size > MaxFileSize {
		return wire.FileIdentity{}, fmt.Errorf("%s: %w", path, ErrTooLarge)
	}
	return fileIdentity(&st, path), nil
}

// Dir returns the identity of the directory open at fd (O_PATH is enough),
// recorded under path: (dev, ino), the mount id and the birth time.
func Dir(fd int, path string) (wire.DirIdentity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return wire.DirIdentity{}, fmt.Errorf("fstat %s: %w", path, err)
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return wire.DirIdentity{}, fmt.Errorf("%s: not a directory", path)
	}
	mnt, birth, err := dirFacts(fd, &st)
	if err != nil {
		return wire.DirIdentity{}, fmt.Errorf("mount id of %s: %w", path, err)
	}
	return wire.DirIdentity{Path: path, Dev: uint64(st.Dev), Ino: uint64(st.Ino), MntID: mnt, BirthNs: birth}, nil
}

// SameFile reports whether a and b have the same fstat identity: dev, ino,
// mode, uid, size, mtime and ctime. Paths and digests are not compared.
func SameFile(a, b wire.FileIdentity) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Mode == b.Mode && a.UID == b.UID &&
		a.Size == b.Size && a.MtimeNs == b.MtimeNs && a.CtimeNs == b.CtimeNs
}

// copyChunk is the most CopyExact reads with one pread.
const copyChunk = 256 << 10

// CopyExact writes exactly size bytes of fd, read with pread from offset
// 0, to w. A file that is shorter or longer than size is an error: it
// changed under us.
func CopyExact(w io.Writer, fd int, size int64) error {
	// A small file gets a buffer one byte larger than itself, not a whole
	// chunk: the launcher hashes every executable it runs, and most are
	// far below copyChunk. The extra byte is where growth shows.
	n := int64(copyChunk)
	if size >= 0 && size < n {
		n = size + 1
	}
	buf := make([]byte, n)
	var off int64
	for {
		var n int
		err := retry.EINTR(func() (err error) {
			n, err = unix.Pread(fd, buf, off)
			return err
		})
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if off+int64(n) > size {
			return errors.New("file grew while it was read")
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		off += int64(n)
	}
	if off != size {
		return errors.New("file shrank while it was read")
	}
	return nil
}
