package snapshot

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/fsid"
)

// Seals is the set of seals every snapshot carries.
const Seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// ErrNoExecMemfd means the kernel refuses executable memfds
// (vm.memfd_noexec=2). There is no fallback to exec-by-path.
var ErrNoExecMemfd = errors.New("the kernel refuses executable memfds (vm.memfd_noexec=2)")

// sealTries bounds the attempts to seal a memfd that stays busy.
const sealTries = 4

// Create copies exactly size bytes of the file open at src into a new
// close-on-exec memfd, hashing them on the way, then seals it. It returns
// the memfd and the SHA-256 of the sealed content.
func Create(src int, size int64, name string) (fd int, sum [32]byte, err error) {
	fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if err == unix.EINVAL {
		// Kernels before 6.3 do not know MFD_EXEC; their memfds are executable.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err == unix.EACCES {
		return -1, sum, ErrNoExecMemfd
	}
	if err != nil {
		return -1, sum, fmt.Errorf("memfd_create: %w", err)
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
			fd = -1
		}
	}()
	if err = unix.Ftruncate(fd, size); err != nil {
		return fd, sum, fmt.Errorf("size memfd: %w", err)
	}
	h := sha256.New()
	dst := &fdWriter{fd: fd}
	if err = fsid.CopyExact(io.MultiWriter(h, dst), src, size); err != nil {
		return fd, sum, fmt.Errorf("copy into memfd: %w", err)
	}
	// The kernel refuses F_SEAL_WRITE (EBUSY) while a page is referenced
	// beyond the page cache, which it waits out for about 150 ms; under
	// memory pressure (migration, reclaim) that can take longer.
	for range sealTries {
		if _, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, Seals); err != unix.EBUSY {
			break
		}
	}
	if err != nil {
		return fd, sum, fmt.Errorf("seal memfd: %w", err)
	}
	copy(sum[:], h.Sum(nil))
	return fd, sum, nil
}

// Verify checks that fd carries every seal in Seals and holds exactly size
// bytes, and returns the SHA-256 of its content.
func Verify(fd int, size int64) (sum [32]byte, err error) {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return sum, fmt.Errorf("get seals: %w", err)
	}
	if seals&Seals != Seals {
		return sum, fmt.Errorf("snapshot seals %#x lack %#x", seals, Seals&^seals)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return sum, fmt.Errorf("fstat snapshot: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != size {
		return sum, fmt.Errorf("snapshot is not a regular file of %d bytes", size)
	}
	h := sha256.New()
	if err := fsid.CopyExact(h, fd, size); err != nil {
		return sum, fmt.Errorf("hash snapshot: %w", err)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// fdWriter writes sequentially to a descriptor with pwrite, so that the
// memfd's offset is never shared state.
type fdWriter struct {
	fd  int
	off int64
}

func (w *fdWriter) Write(p []byte) (int, error) {
	n, err := unix.Pwrite(w.fd, p, w.off)
	w.off += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return n, os.NewSyscallError("pwrite", err)
	}
	return n, nil
}
