package runner

import (
	"fmt"
	"os"

	"warrant/internal/fsid"
)

// pin opens the launcher once, at broker start, and pins it (pinOpen).
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
	p, err := pinOpen(f, int64(id.Size))
	if err != nil {
		return nil, fmt.Errorf("pin launcher: %w", err)
	}
	return p, nil
}
