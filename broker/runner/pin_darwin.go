package runner

import (
	"fmt"
	"os"

	"warrant/internal/fsid"
)

// pinned is the launcher's path and the digest it had when the broker
// started. macOS cannot execute a descriptor, so the launcher is executed
// by path and is not bound: the digest is recorded, not enforced.
type pinned struct {
	path string
	sum  [32]byte
}

func pin(path string) (*pinned, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open launcher: %w", err)
	}
	defer f.Close()
	id, err := fsid.File(int(f.Fd()), path)
	if err != nil {
		return nil, fmt.Errorf("launcher: %w", err)
	}
	p := &pinned{path: path}
	copy(p.sum[:], id.SHA256)
	return p, nil
}

func (p *pinned) close() {}
