//go:build linux || darwin

package rmtree

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// MaxDepth bounds the directory levels Beneath descends at once (one
// descriptor each); a directory deeper than that is moved up to the top
// of the tree and removed from there in a later pass.
const MaxDepth = 1024

// Beneath removes name, an entry of the directory root, and everything in
// it. Errors name the entry that stopped it, relative to root.
func Beneath(root, name string) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(fd)
	w := &walk{top: -1}
	return w.removeAt(fd, &entry{name: name}, 0)
}

// walk is one removal: the top directory's descriptor, once open, and
// the count of directories moved up to it.
type walk struct {
	top   int
	moved int
}

// entry is a name beneath Beneath's root, linked to its parent's: the
// path is spelt out only for an error (a target can make it long).
type entry struct {
	parent *entry
	name   string
}

// maxMessagePath bounds the path an error names; the middle of a longer
// one is left out.
const maxMessagePath = 256

func (e *entry) String() string {
	var names []string
	for ; e != nil; e = e.parent {
		names = append(names, e.name)
	}
	slices.Reverse(names)
	p := strings.Join(names, "/")
	if len(p) > maxMessagePath {
		p = strings.ToValidUTF8(p[:maxMessagePath/2]+"…"+p[len(p)-maxMessagePath/2:], "")
	}
	return p
}

// removeAt removes e beneath the directory dirfd: unlinked if it is not a
// directory (a symlink is removed, never followed); otherwise given its
// owner's rwx back through a descriptor opened without following a
// symlink (a mode-0 directory, a read-only module cache), opened with
// O_NOFOLLOW, emptied and removed. A directory MaxDepth levels down is
// moved up into the top directory instead, which is read again until a
// pass moves nothing.
func (w *walk) removeAt(dirfd int, e *entry, depth int) error {
	err := unix.Unlinkat(dirfd, e.name, 0)
	switch {
	case err == nil || err == unix.ENOENT:
		return nil
	case err != unix.EISDIR && err != unix.EPERM: // EPERM: a directory, on macOS
		return &os.PathError{Op: "unlink", Path: e.String(), Err: err}
	case depth >= MaxDepth:
		return w.moveUp(dirfd, e)
	}
	if err := ownerRWX(dirfd, e.name); err != nil {
		return &os.PathError{Op: "chmod", Path: e.String(), Err: err}
	}
	var fd int
	err = retry.EINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: e.String(), Err: err}
	}
	d := os.NewFile(uintptr(fd), e.name)
	defer d.Close()
	if depth == 0 {
		w.top = fd
	}
	for {
		moved := w.moved
		for {
			names, err := d.Readdirnames(256)
			for _, n := range names {
				if err := w.removeAt(fd, &entry{parent: e, name: n}, depth+1); err != nil {
					return err
				}
			}
			if err != nil {
				break // io.EOF, or a read error that the rmdir below reports
			}
		}
		if depth > 0 || w.moved == moved {
			break
		}
		if _, err := d.Seek(0, 0); err != nil { // read the top again: what was moved there
			return &os.PathError{Op: "seek", Path: e.String(), Err: err}
		}
	}
	if err := unix.Unlinkat(dirfd, e.name, unix.AT_REMOVEDIR); err != nil {
		return &os.PathError{Op: "rmdir", Path: e.String(), Err: err}
	}
	return nil
}

// moveUp moves the directory e beneath dirfd into the top directory,
// under a name of its own there.
func (w *walk) moveUp(dirfd int, e *entry) error {
	for {
		to := fmt.Sprintf(".rmtree-%d", w.moved)
		w.moved++
		err := unix.Renameat(dirfd, e.name, w.top, to)
		switch {
		case err == nil:
			return nil
		case err != unix.EEXIST && err != unix.ENOTEMPTY && err != unix.ENOTDIR: // else the name is taken: the next one
			return &os.PathError{Op: "rename", Path: e.String(), Err: err}
		}
	}
}
