package linux

import (
	"golang.org/x/sys/unix"

	"warrant/wire"
)

// cleanSlate performs step 1: fds 0–2 open (on /dev/null when the broker
// left one closed, so that no received descriptor can land there), every
// inherited "ignore" disposition back to default, an empty signal mask,
// and with CAP_SETPCAP an empty bounding set.
func cleanSlate() error {
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
			continue
		}
		if got, err := unix.Open("/dev/null", unix.O_RDWR, 0); err != nil || got != fd {
			return wire.Errorf(wire.CodeIOFailed, "open /dev/null as fd %d: %v", fd, err)
		}
	}
	// Dispositions the runtime handles are reset by execve; only ignored
	// ones survive it, so those are set back to default here.
	for sig := 1; sig <= maxSignal; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		if err := unignoreSignal(sig); err != nil {
			return wire.Errorf(wire.CodeIOFailed, "reset the disposition of signal %d: %v", sig, err)
		}
	}
	if err := clearSignalMask(); err != nil {
		return wire.Errorf(wire.CodeIOFailed, "clear the signal mask: %v", err)
	}
	return dropBoundingSet()
}

// maxSignal is the highest Linux signal number (SIGRTMAX).
const maxSignal = 64

// clearSignalMask empties this thread's signal mask, which execve passes
// on to the target.
func clearSignalMask() error {
	var empty unix.Sigset_t
	return unix.PthreadSigmask(unix.SIG_SETMASK, &empty, nil)
}

// setStdio performs step 7: 0 = /dev/null, 1 and 2 = the received pipes,
// and every other descriptor close-on-exec except keep (a script's sealed
// copy, or -1). The reply socket and the exec memfd are close-on-exec and
// vanish with the exec.
func setStdio(fds *received, keep int) error {
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return wire.Errorf(wire.CodeIOFailed, "open /dev/null: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(null, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
		return wire.Errorf(wire.CodeSandboxUnavailable, "/dev/null is not the null device")
	}
	for i, fd := range []int{null, fds.stdout, fds.stderr} {
		if err := unix.Dup3(fd, i, 0); err != nil {
			return wire.Errorf(wire.CodeIOFailed, "install fd %d: %v", i, err)
		}
		unix.Close(fd)
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "close_range: %v", err)
	}
	if keep >= 0 {
		if _, err := unix.FcntlInt(uintptr(keep), unix.F_SETFD, 0); err != nil {
			return wire.Errorf(wire.CodeIOFailed, "pass the script descriptor: %v", err)
		}
	}
	return nil
}
