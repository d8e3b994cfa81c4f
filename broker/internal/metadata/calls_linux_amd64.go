package metadata

import "golang.org/x/sys/unix"

// The ABI of the launcher's programs, and its two calls the server
// answers for egress (egress_linux.go).
const (
	auditArch  = unix.AUDIT_ARCH_X86_64
	sysSocket  = unix.SYS_SOCKET
	sysConnect = unix.SYS_CONNECT
)

// decode reads one notified call's arguments from the caller. Every call
// of seccompgen's notified list is here; anything else the filter could
// notify is refused.
func decode(c *caller, d *seccompData) (*call, unix.Errno) {
	if d.Arch != unix.AUDIT_ARCH_X86_64 {
		return nil, unix.EPERM
	}
	a := d.Args
	fd := func(i int) int32 { return int32(a[i]) } // an *at call's signed dirfd
	var (
		cl    = &call{dirfd: unix.AT_FDCWD, follow: true}
		errno unix.Errno
	)
	switch int(d.Nr) {
	case unix.SYS_CHMOD:
		cl.path, errno = c.pathArg(a[0])
		cl.apply = chmodOp(uint32(a[1]))
	case unix.SYS_FCHMOD:
		cl.dirfd, errno = objFD(a[0])
		cl.apply = chmodOp(uint32(a[1]))
	case unix.SYS_FCHMODAT:
		cl.dirfd = fd(0)
		cl.path, errno = c.pathArg(a[1])
		cl.apply = chmodOp(uint32(a[2]))
	case unix.SYS_FCHMODAT2:
		if errno = atFlags(a[3]); errno == 0 {
			cl.dirfd, cl.follow = fd(0), a[3]&unix.AT_SYMLINK_NOFOLLOW == 0
			cl.path, errno = c.atPath(a[1], a[3])
			cl.apply = chmodOp(uint32(a[2]))
		}
	case unix.SYS_CHOWN, unix.SYS_LCHOWN:
		cl.follow = d.Nr == unix.SYS_CHOWN
		cl.path, errno = c.pathArg(a[0])
		cl.apply = chownOp(uint32(a[1]), uint32(a[2]))
	case unix.SYS_FCHOWN:
		cl.dirfd, errno = objFD(a[0])
		cl.apply = chownOp(uint32(a[1]), uint32(a[2]))
	case unix.SYS_FCHOWNAT:
		if errno = atFlags(a[4]); errno == 0 {
			cl.dirfd, cl.follow = fd(0), a[4]&unix.AT_SYMLINK_NOFOLLOW == 0
			cl.path, errno = c.atPath(a[1], a[4])
			cl.apply = chownOp(uint32(a[2]), uint32(a[3]))
		}
	case unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR:
		if errno = c.target(cl, a[0], d.Nr == unix.SYS_FSETXATTR, d.Nr == unix.SYS_SETXATTR); errno == 0 {
			if a[4]&^uint64(unix.XATTR_CREATE|unix.XATTR_REPLACE) != 0 {
				return nil, unix.EINVAL
			}
			name, value, e := c.xattrArgs(a[1], a[2], a[3], true)
			errno = e
			cl.apply = setxattrOp(name, value, int(a[4]))
		}
	case unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR:
		if errno = c.target(cl, a[0], d.Nr == unix.SYS_FREMOVEXATTR, d.Nr == unix.SYS_REMOVEXATTR); errno == 0 {
			name, _, e := c.xattrArgs(a[1], 0, 0, false)
			errno = e
			cl.apply = removexattrOp(name)
		}
	case unix.SYS_UTIME:
		cl.path, errno = c.pathArg(a[0])
		if errno == 0 {
			ts, e := c.utimbuf(a[1])
			errno, cl.apply = e, timesOp(ts)
		}
	case unix.SYS_UTIMES, unix.SYS_FUTIMESAT:
		p, t := a[0], a[1]
		if d.Nr == unix.SYS_FUTIMESAT {
			cl.dirfd, p, t = fd(0), a[1], a[2]
		}
		cl.path, errno = c.pathArg(p)
		if errno == 0 {
			ts, e := c.timevals(t)
			errno, cl.apply = e, timesOp(ts)
		}
	case unix.SYS_UTIMENSAT:
		if errno = atFlags(a[3]); errno != 0 {
			break
		}
		cl.dirfd, cl.follow = fd(0), a[3]&unix.AT_SYMLINK_NOFOLLOW == 0
		if a[1] != 0 { // a NULL path is the descriptor itself (futimens)
			cl.path, errno = c.atPath(a[1], a[3])
		} else if cl.dirfd == unix.AT_FDCWD {
			errno = unix.EFAULT
		}
		if errno == 0 {
			ts, e := c.timespecs(a[2])
			errno, cl.apply = e, timesOp(ts)
		}
	case unix.SYS_INOTIFY_ADD_WATCH:
		var ifd int32
		if ifd, errno = objFD(a[0]); errno == 0 {
			mask := uint32(a[2])
			cl.follow = mask&unix.IN_DONT_FOLLOW == 0
			if cl.path, errno = c.pathArg(a[1]); errno == 0 {
				errno = c.openThread()
			}
			cl.apply = inotifyOp(ifd, mask)
		}
	default:
		return nil, unix.EPERM
	}
	if errno != 0 {
		return nil, errno
	}
	return cl, 0
}

// atFlags refuses AT_ flags other than the two the metadata calls take.
func atFlags(f uint64) unix.Errno {
	if f&^uint64(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return unix.EINVAL
	}
	return 0
}

// target reads the object of an xattr call: the descriptor a0 of the
// f- form, else the path at a0, followed unless it is the l- form.
func (c *caller) target(cl *call, a0 uint64, byFD, follow bool) (errno unix.Errno) {
	if byFD {
		cl.dirfd, errno = objFD(a0)
		return errno
	}
	cl.follow = follow
	cl.path, errno = c.pathArg(a0)
	return errno
}

// writeOpen reads the registers of an open the hints program notifies
// (open, openat or creat: it notifies them only with write intent); ok
// is false for any other call. creat is open with O_CREAT|O_WRONLY|O_TRUNC.
func writeOpen(d *seccompData) (o openCall, ok bool) {
	if d.Arch != unix.AUDIT_ARCH_X86_64 {
		return openCall{}, false
	}
	a := d.Args
	switch d.Nr {
	case unix.SYS_OPEN:
		return openCall{"open", unix.AT_FDCWD, a[0], a[1]}, true
	case unix.SYS_OPENAT:
		return openCall{"openat", int32(a[0]), a[1], a[2]}, true
	case unix.SYS_CREAT:
		return openCall{"creat", unix.AT_FDCWD, a[0], unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC}, true
	}
	return openCall{}, false
}
