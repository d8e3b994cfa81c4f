package metadata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// call is one decoded metadata call: the object it names and what to do
// to it.
type call struct {
	dirfd  int32   // the caller's directory descriptor, AT_FDCWD, or the object itself when path is nil
	path   *string // nil: the object is dirfd
	follow bool    // a trailing symlink is followed
	apply  func(s *Server, obj int, st *unix.Stat_t) unix.Errno
}

// caller is one notification's process, read through /proc.
type caller struct {
	pid   int
	mem   *os.File
	pidfd *os.File // the caller's thread, for pidfd_getfd (inotify_linux.go)
	root  *os.File // its root directory, in its mount namespace (view_linux.go)
	val   *int64   // the call's result once performed (inotify_add_watch's watch descriptor)
}

// answer decides one notification and returns the errno for its caller
// (0: done, and the call returns *val).
func (s *Server) answer(n *notif, val *int64) unix.Errno {
	c := &caller{pid: int(n.Pid), val: val}
	defer c.close()
	cl, errno := decode(c, &n.Data)
	if errno != 0 {
		return errno
	}
	obj, errno := c.open(cl)
	if errno != 0 {
		return errno
	}
	defer unix.Close(obj)
	if errno := c.openRoot(); errno != 0 {
		return errno
	}
	// Everything read from the caller (memory, cwd, root, descriptors)
	// was read while its notification was pending: its pid was its own.
	if !idValid(s.listener, n.ID) {
		return unix.ESRCH
	}
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil || !actable(&st) {
		return unix.EPERM
	}
	target := obj
	if !nameless(cl, obj, &st) {
		v, errno := s.inView(c, obj)
		if errno != 0 {
			return errno
		}
		defer unix.Close(v)
		target = v
	}
	if st.Uid != uint32(s.uid) {
		return unix.EPERM
	}
	return cl.apply(s, target, &st)
}

// nameless reports whether a descriptor call names a regular file with
// no name left (unlinked, O_TMPFILE): a change to it reaches nothing
// outside the action. A memfd is never nameless here: the broker's sealed
// snapshots are memfds, shared by every action of one program.
func nameless(cl *call, obj int, st *unix.Stat_t) bool {
	if cl.path != nil || st.Nlink != 0 || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	p, err := fdPath(obj)
	return err == nil && !strings.HasPrefix(p, "/memfd:")
}

func (c *caller) close() {
	if c.mem != nil {
		c.mem.Close()
	}
	if c.pidfd != nil {
		c.pidfd.Close()
	}
	if c.root != nil {
		c.root.Close()
	}
}

// read copies n bytes at addr of the caller's memory.
func (c *caller) read(addr uint64, n int) ([]byte, unix.Errno) {
	if addr == 0 {
		return nil, unix.EFAULT
	}
	if c.mem == nil {
		f, err := os.Open(fmt.Sprintf("/proc/%d/mem", c.pid))
		if err != nil {
			return nil, unix.EPERM // not ours to read (it made itself non-dumpable, or it is gone)
		}
		c.mem = f
	}
	b := make([]byte, n)
	if _, err := c.mem.ReadAt(b, int64(addr)); err != nil {
		return nil, unix.EFAULT
	}
	return b, 0
}

// str copies a NUL-terminated string of at most max bytes (the NUL not
// counted) at addr, a page at a time so that it never reads past a
// mapping it does not need.
func (c *caller) str(addr uint64, max int) (string, unix.Errno) {
	var out []byte
	for len(out) <= max {
		n := 4096 - int(addr%4096)
		b, errno := c.read(addr, n)
		if errno != 0 {
			return "", errno
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			out = append(out, b[:i]...)
			if len(out) > max {
				break
			}
			return string(out), 0
		}
		out = append(out, b...)
		addr += uint64(n)
	}
	return "", unix.ENAMETOOLONG
}

// open returns an O_PATH descriptor of the object cl names, found as the
// caller's own call would find it.
func (c *caller) open(cl *call) (int, unix.Errno) {
	if cl.path != nil {
		if n, ok := c.procFD(*cl.path); ok {
			// libc reaches a descriptor's object through /proc/self/fd/N
			// (fchmodat with AT_SYMLINK_NOFOLLOW before fchmodat2): that
			// is the caller's descriptor N, not one of ours.
			if !cl.follow {
				return -1, unix.EPERM
			}
			cl = &call{dirfd: n, apply: cl.apply}
		}
	}
	var base string
	if cl.dirfd == unix.AT_FDCWD {
		base = fmt.Sprintf("/proc/%d/cwd", c.pid)
	} else if cl.dirfd >= 0 {
		base = fmt.Sprintf("/proc/%d/fd/%d", c.pid, cl.dirfd)
	} else {
		return -1, unix.EBADF
	}
	dir, err := unix.Open(base, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT && cl.dirfd != unix.AT_FDCWD {
			return -1, unix.EBADF
		}
		return -1, unix.EPERM
	}
	if cl.path == nil {
		return dir, 0
	}
	defer unix.Close(dir)
	flags := unix.O_PATH | unix.O_CLOEXEC
	if !cl.follow {
		flags |= unix.O_NOFOLLOW
	}
	// The caller's /proc/self is not ours: magic links are refused, so a
	// path through them is never resolved in the broker's place.
	fd, err := unix.Openat2(dir, *cl.path, &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		if errno, ok := err.(unix.Errno); ok && errno != unix.ELOOP {
			return -1, errno
		}
		return -1, unix.EPERM
	}
	return fd, 0
}

// procFD reports whether p names one of the caller's descriptors through
// its own /proc entry: /proc/self/fd/N, /proc/thread-self/fd/N or
// /proc/PID/fd/N.
func (c *caller) procFD(p string) (int32, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return 0, false
	}
	who, rest, ok := strings.Cut(rest, "/")
	if !ok || (who != "self" && who != "thread-self" && who != strconv.Itoa(c.pid)) {
		return 0, false
	}
	num, ok := strings.CutPrefix(rest, "fd/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != num {
		return 0, false
	}
	return int32(n), true
}

// The operations, performed on a descriptor proven beneath the writable
// scope, opened as the caller's mount namespace shows it (view_linux.go)
// and owned by the caller's uid; none changes an object on a read-only
// mount there.

func chmodOp(mode uint32) func(*Server, int, *unix.Stat_t) unix.Errno {
	return func(_ *Server, obj int, st *unix.Stat_t) unix.Errno {
		switch {
		case readOnly(obj):
			return unix.EROFS
		case mode&(unix.S_ISUID|unix.S_ISGID) != 0:
			return unix.EPERM
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return unix.EOPNOTSUPP // as the kernel answers fchmodat2(AT_SYMLINK_NOFOLLOW) on a link
		}
		return errnoOf(unix.Fchmodat(unix.AT_FDCWD, procFD(obj), mode&0o7777, 0))
	}
}

func chownOp(uid, gid uint32) func(*Server, int, *unix.Stat_t) unix.Errno {
	return func(s *Server, obj int, _ *unix.Stat_t) unix.Errno {
		const keep = ^uint32(0)
		if readOnly(obj) {
			return unix.EROFS
		}
		if uid != keep && uid != uint32(s.uid) {
			return unix.EPERM
		}
		if gid != keep && gid != uint32(s.gid) && !slices.Contains(s.groups, int(gid)) {
			return unix.EPERM
		}
		return errnoOf(unix.Fchownat(obj, "", int(int32(uid)), int(int32(gid)), unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW))
	}
}

// xattrAllowed are the namespaces an owner may set without capabilities
// and that grant nothing outside the file: never security.* (file
// capabilities) or trusted.*.
func xattrAllowed(name string) bool {
	return strings.HasPrefix(name, "user.") || name == "system.posix_acl_access" || name == "system.posix_acl_default"
}

func setxattrOp(name string, value []byte, flags int) func(*Server, int, *unix.Stat_t) unix.Errno {
	return func(_ *Server, obj int, st *unix.Stat_t) unix.Errno {
		if !xattrAllowed(name) || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return unix.EPERM
		}
		if readOnly(obj) {
			return unix.EROFS
		}
		return errnoOf(unix.Setxattr(procFD(obj), name, value, flags))
	}
}

func removexattrOp(name string) func(*Server, int, *unix.Stat_t) unix.Errno {
	return func(_ *Server, obj int, st *unix.Stat_t) unix.Errno {
		if !xattrAllowed(name) || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return unix.EPERM
		}
		if readOnly(obj) {
			return unix.EROFS
		}
		return errnoOf(unix.Removexattr(procFD(obj), name))
	}
}

// timesOp sets the access and modification times (nil: both now).
func timesOp(ts []unix.Timespec) func(*Server, int, *unix.Stat_t) unix.Errno {
	if ts == nil {
		ts = []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	}
	return func(_ *Server, obj int, _ *unix.Stat_t) unix.Errno {
		if readOnly(obj) {
			return unix.EROFS
		}
		return errnoOf(unix.UtimesNanoAt(obj, "", ts, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW))
	}
}

// procFD names obj through /proc/self/fd, for the calls that take only a
// path; the magic link leads to the object itself.
func procFD(obj int) string { return fmt.Sprintf("/proc/self/fd/%d", obj) }

func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	if errno, ok := err.(unix.Errno); ok {
		return errno
	}
	return unix.EPERM
}

// Argument readers shared by the call table.

// pathArg reads a path argument (PATH_MAX, NUL included).
func (c *caller) pathArg(addr uint64) (*string, unix.Errno) {
	p, errno := c.str(addr, unix.PathMax-1)
	if errno != 0 {
		return nil, errno
	}
	if p == "" {
		return nil, unix.ENOENT
	}
	return &p, 0
}

// atPath reads the path of an *at call with AT_ flags: an empty path with
// AT_EMPTY_PATH names dirfd itself.
func (c *caller) atPath(addr uint64, flags uint64) (*string, unix.Errno) {
	if flags&unix.AT_EMPTY_PATH != 0 {
		p, errno := c.str(addr, unix.PathMax-1)
		if errno != 0 || p == "" {
			return nil, errno
		}
		return &p, 0
	}
	return c.pathArg(addr)
}

// The kernel's bounds on extended attributes (linux/limits.h).
const (
	xattrNameMax = 255
	xattrSizeMax = 65536
)

// xattrArgs reads a name (XATTR_NAME_MAX) and, for a set, its value
// (XATTR_SIZE_MAX).
func (c *caller) xattrArgs(nameAddr, valueAddr, size uint64, set bool) (string, []byte, unix.Errno) {
	name, errno := c.str(nameAddr, xattrNameMax)
	if errno != 0 {
		return "", nil, errno
	}
	if name == "" {
		return "", nil, unix.ERANGE
	}
	if !set || size == 0 {
		return name, nil, 0
	}
	if size > xattrSizeMax {
		return "", nil, unix.E2BIG
	}
	v, errno := c.read(valueAddr, int(size))
	return name, v, errno
}

// timespecs reads struct timespec[2] (nil pointer: now), as utimensat
// takes it.
func (c *caller) timespecs(addr uint64) ([]unix.Timespec, unix.Errno) {
	return c.times(addr, 32, func(sec, nsec int64) (unix.Timespec, bool) {
		return unix.Timespec{Sec: sec, Nsec: nsec}, true
	})
}

// timevals reads struct timeval[2] (nil pointer: now), as utimes and
// futimesat take them.
func (c *caller) timevals(addr uint64) ([]unix.Timespec, unix.Errno) {
	return c.times(addr, 32, func(sec, usec int64) (unix.Timespec, bool) {
		return unix.Timespec{Sec: sec, Nsec: usec * 1000}, usec >= 0 && usec < 1e6
	})
}

// utimbuf reads struct utimbuf (nil pointer: now), as utime takes it: two
// whole seconds.
func (c *caller) utimbuf(addr uint64) ([]unix.Timespec, unix.Errno) {
	return c.times(addr, 16, func(sec, _ int64) (unix.Timespec, bool) { return unix.Timespec{Sec: sec}, true })
}

// times reads the two times of size bytes at addr — each one 64-bit word
// (size 16) or two (size 32) — and converts each with conv, which says
// whether it is valid.
func (c *caller) times(addr uint64, size int, conv func(a, b int64) (unix.Timespec, bool)) ([]unix.Timespec, unix.Errno) {
	if addr == 0 {
		return nil, 0
	}
	buf, errno := c.read(addr, size)
	if errno != 0 {
		return nil, errno
	}
	step := size / 2
	ts := make([]unix.Timespec, 2)
	for i := range ts {
		a := int64(binary.NativeEndian.Uint64(buf[step*i:]))
		var b int64
		if step == 16 {
			b = int64(binary.NativeEndian.Uint64(buf[step*i+8:]))
		}
		var ok bool
		if ts[i], ok = conv(a, b); !ok {
			return nil, unix.EINVAL
		}
	}
	return ts, 0
}
