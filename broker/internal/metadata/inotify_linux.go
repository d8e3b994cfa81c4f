package metadata

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// inotify_add_watch is answered like the metadata calls: the object is
// resolved and proven beneath the writable scope, then the broker adds
// the watch to the caller's own inotify instance (a duplicate of its
// descriptor, taken with pidfd_getfd) and returns the watch descriptor.

// openThread pins the notification's thread (its pid is a thread id) with
// a pidfd, while the notification is pending: answer's idValid check
// afterwards proves the pidfd is the caller's.
func (c *caller) openThread() unix.Errno {
	fd, err := unix.PidfdOpen(c.pid, unix.PIDFD_THREAD)
	if err != nil {
		return c.refuse(pidfdRule(err))
	}
	c.pidfd = os.NewFile(uintptr(fd), "pidfd")
	return 0
}

// pidfdRule is the rule that refuses a watch when pidfd_open or
// pidfd_getfd failed with err: a kernel without thread pidfds (Linux
// before 6.9, which takes PIDFD_THREAD for an unknown flag: EINVAL) or
// without the call (ENOSYS) cannot support a watch at all; otherwise the
// caller was not the broker's to reach (or it is gone: answer records
// nothing then).
func pidfdRule(err error) wire.DenialRule {
	if err == unix.EINVAL || err == unix.ENOSYS {
		return wire.RuleKernelUnsupported
	}
	return wire.RuleCallerUnreadable
}

// inotifyFD returns a duplicate of the caller's descriptor fd, which must
// be an inotify instance (EINVAL otherwise, as the kernel answers).
// pidfd_getfd needs the same ptrace access as reading the caller's
// memory: where it is refused (a non-dumpable caller, Yama's
// ptrace_scope 2 or 3 for a broker without CAP_SYS_PTRACE) the call is
// refused.
func (c *caller) inotifyFD(fd int32) (int, unix.Errno) {
	if c.pidfd == nil {
		return -1, c.refuse(wire.RuleCallerUnreadable)
	}
	dup, err := unix.PidfdGetfd(int(c.pidfd.Fd()), int(fd), 0)
	if err != nil {
		if err == unix.EBADF {
			return -1, unix.EBADF
		}
		return -1, c.refuse(pidfdRule(err))
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
// instance fd and returns the watch descriptor in *c.val. IN_DONT_FOLLOW
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
		*c.val = int64(w)
		return 0
	}
}
