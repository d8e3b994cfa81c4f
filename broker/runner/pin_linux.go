package runner

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"warrant/internal/fsid"
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

func pin(path string) (*pinned, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open launcher: %w", err)
	}
	defer f.Close()
	id, err := fsid.Stat(int(f.Fd()), path)
	if err != nil {
		return nil, fmt.Errorf("launcher: %w", err)
	}
	if id.Mode&0o111 == 0 {
		return nil, fmt.Errorf("launcher %s is not executable", path)
	}
	fd, sum, err := snapshot.Create(int(f.Fd()), int64(id.Size), "warrant-launcher")
	if err != nil {
		return nil, fmt.Errorf("pin launcher: %w", err)
	}
	return &pinned{path: fmt.Sprintf("/proc/self/fd/%d", fd), fd: fd, sum: sum}, nil
}

func (p *pinned) close() { unix.Close(p.fd) }
