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

	"warrant/wire"
)

// call is one decoded metadata call: the object it names and what to do
// to it.
type call struct {
	dirfd  int32   // the caller's directory descriptor, AT_FDCWD, or the object itself when path is nil
	path   *string // nil: the object is dirfd
	follow bool    // a trailing symlink is followed
	apply  func(s *Server, c *caller, obj int, st *unix.Stat_t) unix.Errno
}

// caller is one notification's process, read through /proc.
type caller struct {
	pid   int
	mem   *os.File
	pidfd *os.File // the caller's thread, for pidfd_getfd (pidfd_linux.go)
	root  *os.File // its root directory, in its mount namespace (view_linux.go)
	val   int64    // the call's result once performed (inotify_add_watch's watch descriptor)
	// rule is the broker's rule that refused the call (refuse), and object
	// what it named: the path of the object as the broker resolved it, or
	// as the caller gave it where it was refused before it was resolved;
	// a connect's address as the caller gave it, and its family by name
	// (familyName).
	rule   wire.DenialRule
	object string
	family string
}

// refuse answers the call by one of the broker's rules (the first one
// that refused it is recorded): EROFS for a read-only object, as the
// kernel answers, otherwise EPERM.
func (c *caller) refuse(rule wire.DenialRule) unix.Errno {
	if c.rule == 0 {
		c.rule = rule
	}
	if rule == wire.RuleReadOnly {
		return unix.EROFS
	}
	return unix.EPERM
}

// denial is the record of a call the broker refused by one of its rules,
// or nil.
func (c *caller) denial(nr int32) *wire.Denial {
	if c.rule == 0 {
		return nil
	}
	return &wire.Denial{Effect: answeredEffect(nr), Call: callName(nr), Object: c.object, Family: c.family,
		Rule: c.rule, Source: wire.SourceBroker}
}

// answeredEffect is the effect of a call the broker answers itself.
func answeredEffect(nr int32) wire.DenialEffect {
	if nr == sysInotifyAddWatch {
		return wire.EffectWatch
	}
	if nr == sysConnect {
		return wire.EffectConnect
	}
	return wire.EffectMetadata
}

// answerRules are the rules by which the broker refuses the calls it
// answers itself (and the proxy refuses a connection, Record), by their
// effect (answeredEffect). With the calls and, for a connect alone, the
// socket families (familyName), they make the classes of its records a
// closed set (TestClassesAreBounded), which record holds them to.
var answerRules = func() map[wire.DenialEffect][]wire.DenialRule {
	metadata := []wire.DenialRule{wire.RuleOutsideScope, wire.RuleNotOwner, wire.RuleSetID, wire.RuleXattrNamespace,
		wire.RuleForeignOwner, wire.RuleSpecialFile, wire.RuleReadOnly, wire.RuleCallerUnreadable,
		wire.RuleKernelUnsupported}
	return map[wire.DenialEffect][]wire.DenialRule{wire.EffectMetadata: metadata, wire.EffectWatch: metadata,
		wire.EffectConnect: {wire.RuleNoNetwork, wire.RuleHostSocket, wire.RuleNotThroughProxy, wire.RuleNotOnLease,
			wire.RulePrivateAddress, wire.RuleCallerUnreadable, wire.RuleKernelUnsupported}}
}()

// reply is the answer to one notification.
type reply struct {
	errno unix.Errno // 0: the call returns val
	val   int64
	cont  bool // the kernel performs the call (SECCOMP_USER_NOTIF_FLAG_CONTINUE): an egress socket(), an observed open
	meta  bool // a metadata call or watch, which Stats counts
}

// answer decides one notification and returns the reply for its caller,
// and the record of a refusal by a rule (nil for a call performed, or
// failed as the kernel would fail it), or of a hint. A write-intent open
// is continued, whatever its hint (writeHint). A call the filter notifies only
// to have it refused and counted is answered from its registers
// (counted), and so is an egress socket (egressSocket); a connect is the
// broker's to make or refuse (egress_linux.go).
func (s *Server) answer(n *notif) (reply, *wire.Denial) {
	// An open is continued only for the observer of writes, which asked
	// for it: Landlock decides (hint_linux.go). Otherwise it is no call
	// of the server's and is refused like any other below.
	if o, ok := writeOpen(&n.Data); ok && s.hints {
		d := s.writeHint(n, o)
		if d != nil && !idValid(s.listener, n.ID) {
			d = nil // the caller died: its pid, read from, may be another's
		}
		return reply{cont: true}, d
	}
	if s.egressSocket(&n.Data) {
		return reply{cont: true}, nil
	}
	if errno, d, ok := counted(&n.Data); ok {
		return reply{errno: errno}, d
	}
	c := &caller{pid: int(n.Pid)}
	defer c.close()
	var r reply
	if n.Data.Arch == auditArch && n.Data.Nr == sysConnect {
		r.errno = s.connect(c, n)
	} else {
		r.errno, r.meta = s.decide(c, n), true
	}
	if c.rule == wire.RuleCallerUnreadable && !idValid(s.listener, n.ID) {
		return reply{errno: unix.ESRCH, meta: r.meta}, nil // the caller died mid-call: no one was refused
	}
	r.val = c.val
	return r, c.denial(n.Data.Nr)
}

// decide is answer for a metadata call or watch.
func (s *Server) decide(c *caller, n *notif) unix.Errno {
	cl, errno := decode(c, &n.Data)
	if errno != 0 {
		return errno
	}
	if cl.path != nil {
		c.object = *cl.path
	}
	obj, errno := c.open(cl)
	if errno != 0 {
		return errno
	}
	defer unix.Close(obj)
	defer func() { // a refusal names the object by its path, as the kernel names it
		if c.rule != 0 {
			if p, err := fdPath(obj); err == nil {
				c.object = p
			}
		}
	}()
	if errno := c.openRoot(); errno != 0 {
		return errno
	}
	// Everything read from the caller (memory, cwd, root, descriptors)
	// was read while its notification was pending: its pid was its own.
	if !idValid(s.listener, n.ID) {
		return unix.ESRCH
	}
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		return unix.EPERM
	}
	if !actable(&st) {
		return c.refuse(wire.RuleSpecialFile)
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
		return c.refuse(wire.RuleNotOwner)
	}
	return cl.apply(s, c, target, &st)
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
			return nil, c.refuse(wire.RuleCallerUnreadable) // it made itself non-dumpable, or it is gone
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
				return -1, c.refuse(wire.RuleOutsideScope)
			}
			cl = &call{dirfd: n, apply: cl.apply}
		}
	}
	base, ok := c.dirLink(cl.dirfd)
	if !ok {
		return -1, unix.EBADF
	}
	dir, err := unix.Open(base, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT && cl.dirfd != unix.AT_FDCWD {
			return -1, unix.EBADF
		}
		return -1, c.refuse(wire.RuleCallerUnreadable)
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
	how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dir, *cl.path, &how)
	if err == unix.ELOOP && !throughMagicLink(dir, *cl.path, how) {
		return -1, unix.ELOOP // a loop of symlinks, as the caller's own call would meet
	}
	if err != nil {
		if errno, ok := err.(unix.Errno); ok && errno != unix.ELOOP {
			return -1, errno
		}
		return -1, c.refuse(wire.RuleOutsideScope) // through a magic link
	}
	return fd, 0
}

// throughMagicLink reports whether the ELOOP resolving path met was a
// magic link, not a loop of symlinks: the same lookup that may follow
// magic links then ends otherwise. Its result is only looked at (an
// O_PATH descriptor, closed at once), never acted on.
func throughMagicLink(dir int, path string, how unix.OpenHow) bool {
	how.Resolve &^= unix.RESOLVE_NO_MAGICLINKS
	fd, err := unix.Openat2(dir, path, &how)
	if err == nil {
		unix.Close(fd)
	}
	return err != unix.ELOOP
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

// chmodOp never sets a setuid or setgid bit: the mode asking for one is
// refused (and recorded), and setMode masks the bits off besides.
func chmodOp(mode uint32) func(*Server, *caller, int, *unix.Stat_t) unix.Errno {
	return func(_ *Server, c *caller, obj int, st *unix.Stat_t) unix.Errno {
		switch {
		case readOnly(obj):
			return c.refuse(wire.RuleReadOnly)
		case mode&(unix.S_ISUID|unix.S_ISGID) != 0:
			return c.refuse(wire.RuleSetID)
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return unix.EOPNOTSUPP // as the kernel answers fchmodat2(AT_SYMLINK_NOFOLLOW) on a link
		}
		return setMode(obj, mode)
	}
}

// setMode changes obj's mode to mode without a setuid or setgid bit. The
// broker is the only one who performs a target's chmod (the launcher's
// filter notifies every chmod call, and no listener but the broker's can
// exist), so this is the last line: chmodOp refuses such a mode first.
func setMode(obj int, mode uint32) unix.Errno {
	return errnoOf(unix.Fchmodat(unix.AT_FDCWD, procFD(obj), mode&0o7777&^(unix.S_ISUID|unix.S_ISGID), 0))
}

func chownOp(uid, gid uint32) func(*Server, *caller, int, *unix.Stat_t) unix.Errno {
	return func(s *Server, c *caller, obj int, _ *unix.Stat_t) unix.Errno {
		const keep = ^uint32(0)
		if readOnly(obj) {
			return c.refuse(wire.RuleReadOnly)
		}
		if uid != keep && uid != uint32(s.uid) {
			return c.refuse(wire.RuleForeignOwner)
		}
		if gid != keep && gid != uint32(s.gid) && !slices.Contains(s.groups, int(gid)) {
			return c.refuse(wire.RuleForeignOwner)
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

func setxattrOp(name string, value []byte, flags int) func(*Server, *caller, int, *unix.Stat_t) unix.Errno {
	return func(_ *Server, c *caller, obj int, st *unix.Stat_t) unix.Errno {
		if errno := xattrCheck(c, name, obj, st); errno != 0 {
			return errno
		}
		return errnoOf(unix.Setxattr(procFD(obj), name, value, flags))
	}
}

// xattrCheck refuses a name outside the allowed namespaces and an object
// on a read-only mount; a symlink's user attributes are EPERM, as the
// kernel answers.
func xattrCheck(c *caller, name string, obj int, st *unix.Stat_t) unix.Errno {
	switch {
	case !xattrAllowed(name):
		return c.refuse(wire.RuleXattrNamespace)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return unix.EPERM
	case readOnly(obj):
		return c.refuse(wire.RuleReadOnly)
	}
	return 0
}

func removexattrOp(name string) func(*Server, *caller, int, *unix.Stat_t) unix.Errno {
	return func(_ *Server, c *caller, obj int, st *unix.Stat_t) unix.Errno {
		if errno := xattrCheck(c, name, obj, st); errno != 0 {
			return errno
		}
		return errnoOf(unix.Removexattr(procFD(obj), name))
	}
}

// timesOp sets the access and modification times (nil: both now).
func timesOp(ts []unix.Timespec) func(*Server, *caller, int, *unix.Stat_t) unix.Errno {
	if ts == nil {
		ts = []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	}
	return func(_ *Server, c *caller, obj int, _ *unix.Stat_t) unix.Errno {
		if readOnly(obj) {
			return c.refuse(wire.RuleReadOnly)
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

// objFD reads the descriptor of a call on the object itself (fchmod,
// fchown, fsetxattr, fremovexattr; connect's socket), which the kernel
// takes unsigned: one beyond an int's range is no descriptor (EBADF), and
// never AT_FDCWD.
func objFD(a uint64) (int32, unix.Errno) {
	if fd := uint32(a); fd <= 1<<31-1 {
		return int32(fd), 0
	}
	return 0, unix.EBADF
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
