//go:build linux || darwin

package statedir

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Flock takes an exclusive, non-blocking flock on the state directory's
// lock file. The kernel drops it when the process dies, so a SIGKILLed
// broker never leaves a stale lock behind.
func Flock(d Dirs) (*os.File, error) {
	f, err := os.OpenFile(d.LockFile, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock state directory: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("lock state directory: another broker is using %s", d.Root)
		}
		return nil, fmt.Errorf("lock state directory: %w", err)
	}
	return f, nil
}

// OwnerOf is the uid that owns fi's file.
func OwnerOf(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
