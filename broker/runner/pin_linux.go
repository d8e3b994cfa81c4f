package runner

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/snapshot"
)

// pinned is the launcher as it was when the broker started: a sealed
// memfd snapshot, executed through /proc/self/fd/N. The child resolves
// that path before its close-on-exec descriptors are closed.
type pinned struct {
	path string
	fd   int
	sum  [32]byte
}

func pinOpen(f *os.File, size int64) (*pinned, error) {
	fd, sum, err := snapshot.Create(int(f.Fd()), size, "warrant-launcher")
	if err != nil {
		return nil, err
	}
	return &pinned{path: fmt.Sprintf("/proc/self/fd/%d", fd), fd: fd, sum: sum}, nil
}

func (p *pinned) close() { unix.Close(p.fd) }
