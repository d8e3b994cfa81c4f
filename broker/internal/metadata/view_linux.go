package metadata

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// What the broker acts on. The object a call names is resolved from the
// caller's cwd or descriptor, in its mount namespace, but an absolute
// path, or an absolute symlink met on the way, is resolved from the
// broker's root, and the proof beneath the writable scope opens it again
// from the broker's roots. Where the caller's namespace differs from the
// broker's (the launcher's private one makes protected paths read-only
// binds), acting on those descriptors would do what the caller itself
// could not. So the act is on the object opened again by its proven path
// from the caller's own root, on the mount the caller has there, and no
// change is made on a read-only mount (readOnly, in each operation).

// actable reports whether the broker acts on an object of st's type:
// regular files, directories and symlinks only. A device node or FIFO
// (made in the workspace, or a hard link to one outside) is refused: its
// mode decides who may open the device, for every user of the host.
func actable(st *unix.Stat_t) bool {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK:
		return true
	}
	return false
}

// openRoot opens the caller's root directory, in its mount namespace.
func (c *caller) openRoot() unix.Errno {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/root", c.pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return c.refuse(wire.RuleCallerUnreadable) // not ours to inspect, or gone
	}
	c.root = os.NewFile(uintptr(fd), "root")
	return 0
}

// inView proves obj's object lies beneath a root of the writable scope
// (beneathAt) and returns it opened again by that path from the caller's
// root, without following any symlink: the object on the mount the
// caller's namespace has there. Anything else found there is EPERM.
func (s *Server) inView(c *caller, obj int) (int, unix.Errno) {
	b, p, err := s.beneathAt(obj)
	if err != nil {
		return -1, c.refuse(wire.RuleOutsideScope)
	}
	var want unix.Stat_t
	err = unix.Fstat(b, &want)
	unix.Close(b)
	if err != nil || c.root == nil {
		return -1, unix.EPERM
	}
	fd, err := unix.Openat2(int(c.root.Fd()), p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return -1, c.refuse(wire.RuleOutsideScope) // not the same path in the caller's view
	}
	var got unix.Stat_t
	if unix.Fstat(fd, &got) != nil || got.Dev != want.Dev || got.Ino != want.Ino {
		unix.Close(fd)
		return -1, c.refuse(wire.RuleOutsideScope)
	}
	return fd, 0
}

// readOnly reports whether obj lies on a read-only mount or file system
// (or cannot be told): a change there is answered EROFS, as the kernel
// answers its caller, and never made.
func readOnly(obj int) bool {
	var sfs unix.Statfs_t
	return unix.Fstatfs(obj, &sfs) != nil || sfs.Flags&unix.ST_RDONLY != 0
}
