package statedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ReadOperatorFile reads file, one of the operator's files in the state
// directory (what names it in errors), of at most limit bytes: it must be
// a regular file, not a symlink, of the broker's uid, writable by no one
// else. A missing one reads as nil.
func ReadOperatorFile(what, file string, limit int) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, file, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, file, err)
	}
	uid, ok := OwnerOf(fi)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s %s is not a regular file", what, file)
	case !ok || uid != uint32(os.Getuid()):
		return nil, fmt.Errorf("%s %s is not owned by uid %d", what, file, os.Getuid())
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("%s %s is writable by others (mode %v); chmod go-w it", what, file, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, file, err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s %s is larger than %d bytes", what, file, limit)
	}
	return append([]byte{}, b...), nil // never nil: the file exists
}
