package metadata

import (
	"golang.org/x/sys/unix"
)

// inotify_add_watch is answered like the metadata calls: the object is
// resolved and proven beneath the writable scope, then the broker adds
// the watch to the caller's own inotify instance (a duplicate of its
// descriptor, taken with pidfd_getfd: pidfd_linux.go) and returns the
// watch descriptor.

// inotifyFD returns a duplicate of the caller's descriptor fd, which must
// be an inotify instance (EINVAL otherwise, as the kernel answers).
func (c *caller) inotifyFD(fd int32) (int, unix.Errno) {
	dup, errno := c.getfd(fd)
	if errno != 0 {
		return -1, errno
	}
	var buf [32]byte
	n, err := unix.Readlink(procFD(dup), buf[:])
	if err != nil || string(buf[:n]) != "anon_inode:inotify" {
		unix.Close(dup)
		return -1, unix.EINVAL
	}
	return dup, 0
}

// inotifyOp adds a watch with mask on the object to the caller's inotify
// instance fd and returns the watch descriptor in c.val. IN_DONT_FOLLOW
// was honoured when the object was opened; the object is named through
// its magic link, which must be followed to reach it.
func inotifyOp(fd int32, mask uint32) func(*Server, *caller, int, *unix.Stat_t) unix.Errno {
	return func(_ *Server, c *caller, obj int, _ *unix.Stat_t) unix.Errno {
		in, errno := c.inotifyFD(fd)
		if errno != 0 {
			return errno
		}
		defer unix.Close(in)
		w, err := unix.InotifyAddWatch(in, procFD(obj), mask&^unix.IN_DONT_FOLLOW)
		if err != nil {
			return errnoOf(err)
		}
		c.val = int64(w)
		return 0
	}
}
