package darwin

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"warrant/internal/profile"
	"warrant/wire"
)

// checkStdio requires every received descriptor to sit above 2 (the
// broker starts the launcher with 0, 1 and 2 open, so SCM_RIGHTS lands
// higher; anything else would let one dup2 clobber another) and the
// output descriptors to be pipes.
func checkStdio(fds []int) *wire.Error {
	for i, fd := range fds {
		if fd <= 2 {
			return wire.Errorf(wire.CodeArgumentsInvalid, "received descriptor %d landed on %d; the launcher needs 0, 1 and 2 open at start", i, fd)
		}
	}
	for i, name := range []string{"stdout", "stderr"} {
		var st unix.Stat_t
		if err := unix.Fstat(fds[1+i], &st); err != nil {
			return wire.Errorf(wire.CodeArgumentsInvalid, "check %s descriptor: %v", name, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return wire.Errorf(wire.CodeArgumentsInvalid, "the %s descriptor is not a pipe (mode %#o)", name, st.Mode)
		}
	}
	return nil
}

// setupProcess gives the target its clean slate, in this order: stdin
// /dev/null and stdout/stderr the broker's pipes; a new session and
// process group; the profile's rlimits; close-on-exec on every other
// descriptor, so that only 0, 1 and 2 survive execve.
func setupProcess(stdout, stderr int, lim profile.Limits) *wire.Error {
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return wire.Errorf(wire.CodeIOFailed, "open /dev/null: %v", err)
	}
	for to, from := range []int{null, stdout, stderr} {
		if err := unix.Dup2(from, to); err != nil {
			return wire.Errorf(wire.CodeIOFailed, "install descriptor %d: %v", to, err)
		}
		if _, err := unix.FcntlInt(uintptr(to), unix.F_SETFD, 0); err != nil {
			return wire.Errorf(wire.CodeIOFailed, "clear close-on-exec on %d: %v", to, err)
		}
	}
	if _, err := unix.Setsid(); err != nil {
		if sid, _ := unix.Getsid(0); sid != unix.Getpid() {
			return wire.Errorf(wire.CodeInternal, "start a new session: %v", err)
		}
	}
	for _, l := range []struct {
		name     string
		resource int
		value    uint64
	}{
		{"RLIMIT_CPU", unix.RLIMIT_CPU, lim.CPUSeconds},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, lim.FileSize},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, profile.OpenFiles},
		{"RLIMIT_CORE", unix.RLIMIT_CORE, 0},
	} {
		// A hard limit the broker already lowered further is kept: an
		// unprivileged process cannot raise it, and lower is stricter.
		var old unix.Rlimit
		if err := unix.Getrlimit(l.resource, &old); err != nil {
			return wire.Errorf(wire.CodeSandboxUnavailable, "read %s: %v", l.name, err)
		}
		v := min(l.value, old.Max)
		if err := unix.Setrlimit(l.resource, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return wire.Errorf(wire.CodeSandboxUnavailable, "set %s to %d: %v", l.name, v, err)
		}
	}
	return closeOnExecAbove2()
}

// closeOnExecAbove2 marks every open descriptor above 2 close-on-exec.
// macOS has no close_range; /dev/fd lists exactly this process's open
// descriptors (the listing's own is close-on-exec already).
func closeOnExecAbove2() *wire.Error {
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		return wire.Errorf(wire.CodeIOFailed, "list open descriptors: %v", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			return wire.Errorf(wire.CodeIOFailed, "list open descriptors: unexpected entry %q", e.Name())
		}
		if fd <= 2 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return wire.Errorf(wire.CodeIOFailed, "set close-on-exec on %d: %v", fd, err)
		}
	}
	return nil
}
