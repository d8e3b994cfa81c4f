package runner

import (
	"crypto/sha256"
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

func pinOpen(f *os.File, size int64) (*pinned, error) {
	h := sha256.New()
	if err := fsid.CopyExact(h, int(f.Fd()), size); err != nil {
		return nil, err
	}
	p := &pinned{path: f.Name()}
	copy(p.sum[:], h.Sum(nil))
	return p, nil
}

func (p *pinned) close() {}
