package metadata

import (
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// The observer of write-intent opens: Landlock refuses a write outside
// the writable scope by itself, and says so only in its audit records,
// which a broker reads only as root where audit is on
// (broker/internal/audit, WatchKernelAudit). With ObserveWrites the
// launcher's hints program notifies every open with write intent; the
// server reads the path, records a hint where it lies outside the scope,
// and always lets the kernel continue the call: Landlock decides,
// nothing here does. The path is the target's string, read once and
// acted on never.

// writeOpenCalls are the calls a hint may name (writeOpen decodes them).
var writeOpenCalls = []string{"open", "openat", "creat"}

// openCall is one notified open: its name, the directory it is relative
// to, the address of its path and its flags (creat's as open's).
type openCall struct {
	name  string
	dirfd int32
	path  uint64
	flags uint64
}

// ObserveWrites has the server record hints of write-intent opens outside
// the writable scope (the launcher's request asked for them,
// wire.SpawnRequest.ObserveWrites), source "hint". It must be called
// before Serve.
func (s *Server) ObserveWrites() {
	s.hints = true
	s.denials.Watch(wire.SourceHint)
}

// writeHint is the hint of one write-intent open, or nil: for a path
// that could not be read, that names one of the caller's descriptors, a
// device, FIFO or socket (Landlock grants the listed devices; a pipe has
// no path), a directory (EISDIR; but O_TMPFILE, which creates), a file
// that exists opened for reading (O_CREAT alone writes nothing then) or
// with O_CREAT|O_EXCL (EEXIST), a dangling symlink followed (the kernel
// creates its target, not resolved here), or a parent that does not
// exist (ENOENT, not Landlock).
// A path that lies beneath a root as written is taken as inside without
// a lookup (a symlink inside the scope that leads out goes unhinted: a
// hint is not a decision); one outside as written is resolved as the
// caller's open would resolve it (its last component by name), so that
// a symlink leading into the scope is no hint. The object is the path
// the kernel names the file, or its parent directory joined with the
// last component.
func (s *Server) writeHint(n *notif, o openCall) *wire.Denial {
	if !s.hints {
		return nil
	}
	c := &caller{pid: int(n.Pid)}
	defer c.close()
	p, errno := c.pathArg(o.path)
	if errno != 0 {
		return nil
	}
	if _, ok := c.procFD(*p); ok {
		return nil
	}
	base := ""
	if !path.IsAbs(*p) {
		var ok bool
		if base, ok = c.dirPath(o.dirfd); !ok {
			return nil
		}
	}
	if s.scopeHolds(lexical(base, *p)) {
		return nil
	}
	follow := o.flags&unix.O_NOFOLLOW == 0 && o.flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	effect := wire.EffectWrite
	obj, errno := c.open(&call{dirfd: o.dirfd, path: p, follow: follow})
	var where string
	switch {
	case errno == 0:
		defer unix.Close(obj)
		var st unix.Stat_t
		switch {
		case o.flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL:
			return nil // EEXIST comes before Landlock
		case unix.Fstat(obj, &st) != nil:
			return nil
		case st.Mode&unix.S_IFMT == unix.S_IFDIR && o.flags&unix.O_TMPFILE == unix.O_TMPFILE:
			effect = wire.EffectCreate // a file without a name, in that directory
		case st.Mode&unix.S_IFMT != unix.S_IFREG, o.flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_TRUNC) == 0:
			return nil // EISDIR; a device, FIFO or socket; a file opened for reading
		}
		if where, errno = fdPathErrno(obj); errno != 0 {
			return nil
		}
	case errno == unix.ENOENT && o.flags&unix.O_CREAT != 0:
		dir, last := path.Dir(*p), path.Base(*p)
		if last == "." || last == ".." || last == "/" || strings.HasSuffix(*p, "/") {
			return nil
		}
		parent, errno := c.open(&call{dirfd: o.dirfd, path: &dir, follow: true})
		if errno != 0 {
			return nil
		}
		defer unix.Close(parent)
		var st unix.Stat_t
		if follow && unix.Fstatat(parent, last, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			// A dangling symlink: the kernel creates the file it names,
			// perhaps inside the scope, not last.
			return nil
		}
		d, errno := fdPathErrno(parent)
		if errno != 0 {
			return nil
		}
		where, effect = path.Join(d, last), wire.EffectCreate
	default:
		return nil
	}
	if s.scopeHolds(where) {
		return nil
	}
	return &wire.Denial{Effect: effect, Call: o.name, Object: where, Rule: wire.RuleOutsideScope, Source: wire.SourceHint}
}

// fdPathErrno is fdPath for a path the kernel names absolutely.
func fdPathErrno(fd int) (string, unix.Errno) {
	p, err := fdPath(fd)
	if err != nil || !path.IsAbs(p) {
		return "", unix.ENOENT
	}
	return p, 0
}

// dirPath is the path the kernel names the caller's directory dirfd by
// (its cwd for AT_FDCWD).
func (c *caller) dirPath(dirfd int32) (string, bool) {
	link, ok := c.dirLink(dirfd)
	if !ok {
		return "", false
	}
	p, err := readlink(link)
	return p, err == nil && path.IsAbs(p)
}

// dirLink is the caller's magic link for its directory dirfd: its cwd
// for AT_FDCWD; false for any other negative dirfd.
func (c *caller) dirLink(dirfd int32) (string, bool) {
	switch {
	case dirfd == unix.AT_FDCWD:
		return "/proc/" + strconv.Itoa(c.pid) + "/cwd", true
	case dirfd < 0:
		return "", false
	}
	return "/proc/" + strconv.Itoa(c.pid) + "/fd/" + strconv.Itoa(int(dirfd)), true
}

// lexical is p, relative to base, as an absolute cleaned path: ".." is
// taken by name, as if no component were a symlink.
func lexical(base, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(base, p)
}

// scopeHolds reports whether the absolute, cleaned path p is a root of
// the writable scope or lies beneath one, by name alone.
func (s *Server) scopeHolds(p string) bool {
	for _, r := range s.roots {
		if p == r.path || strings.HasPrefix(p, r.path+"/") {
			return true
		}
	}
	return false
}
