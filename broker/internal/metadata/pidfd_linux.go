package metadata

import (
	"os"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// The caller's descriptors, which the broker acts on for a watch (its
// inotify instance, inotify_linux.go) and a connect (its socket,
// egress_linux.go): a duplicate taken with pidfd_getfd.

// openThread pins the notification's thread (its pid is a thread id) with
// a pidfd, while the notification is pending: the idValid check before
// the broker acts proves the pidfd is the caller's.
func (c *caller) openThread() unix.Errno {
	fd, err := unix.PidfdOpen(c.pid, unix.PIDFD_THREAD)
	if err != nil {
		return c.refuse(pidfdRule(err))
	}
	c.pidfd = os.NewFile(uintptr(fd), "pidfd")
	return 0
}

// pidfdRule is the rule that refuses a call when pidfd_open or
// pidfd_getfd failed with err: a kernel without thread pidfds (Linux
// before 6.9, which takes PIDFD_THREAD for an unknown flag: EINVAL) or
// without the call (ENOSYS) cannot support it at all; otherwise the
// caller was not the broker's to reach (or it is gone: answer records
// nothing then).
func pidfdRule(err error) wire.DenialRule {
	if err == unix.EINVAL || err == unix.ENOSYS {
		return wire.RuleKernelUnsupported
	}
	return wire.RuleCallerUnreadable
}

// getfd returns a duplicate of the caller's descriptor fd (EBADF for
// none, as the kernel answers), through the pidfd openThread opened
// while the notification was pending. pidfd_getfd needs the same ptrace
// access as reading the caller's memory: where it is refused (a
// non-dumpable caller, Yama's ptrace_scope 2 or 3 for a broker without
// CAP_SYS_PTRACE) the call is refused.
func (c *caller) getfd(fd int32) (int, unix.Errno) {
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
	return dup, 0
}
