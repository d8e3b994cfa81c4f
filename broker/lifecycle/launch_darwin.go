package lifecycle

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
	"warrant/wire"
)

// handle holds the unreaped launcher on macOS, which has no pidfd: its pid
// (stable while it is our unreaped child) and a kqueue watching its exit.
type handle struct {
	pid, kq int
	gone    bool // it had already exited when the watch was registered
}

// requestSocket is a close-on-exec SOCK_STREAM pair (macOS has neither
// SOCK_SEQPACKET for AF_UNIX nor SOCK_CLOEXEC). The fork lock keeps a
// concurrent fork from inheriting the fds before they are marked.
func requestSocket() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(p[0])
		unix.CloseOnExec(p[1])
	}
	return p, err
}

func pipeCloexec() (p [2]int, err error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err = unix.Pipe(p[:]); err == nil {
		unix.CloseOnExec(p[0])
		unix.CloseOnExec(p[1])
	}
	return p, err
}

// spawn starts the launcher and registers an EVFILT_PROC NOTE_EXIT watch
// on it. The watch reports the exit without reaping, so the zombie holds
// the pid, and with it the process group id, while the group is signalled.
func spawn(path string, files []*os.File, _ int) (int, handle, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return 0, handle{}, os.NewSyscallError("kqueue", err)
	}
	unix.CloseOnExec(kq)
	pid, err := startProcess(path, files, &syscall.SysProcAttr{})
	if err != nil {
		unix.Close(kq)
		return 0, handle{}, err
	}
	h := handle{pid: pid, kq: kq}
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	err = retry.EINTR(func() error {
		_, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil)
		return err
	})
	switch err {
	case nil:
	case unix.ESRCH:
		// Only we can reap our child, so "no such process" means it has
		// already exited and is a zombie.
		h.gone = true
	default:
		unix.Kill(pid, unix.SIGKILL)
		unix.Wait4(pid, nil, 0, nil)
		unix.Close(kq)
		return 0, handle{}, os.NewSyscallError("kevent EVFILT_PROC", err)
	}
	return pid, h, nil
}

// kill signals the launcher by pid: safe, because the pid cannot be reused
// until we reap it.
func (h handle) kill() { unix.Kill(h.pid, unix.SIGKILL) }

// release does nothing: the kqueue belongs to watch, which closes it when
// the exit is seen (a root that never dies keeps it open).
func (h handle) release() {}

// hasExited reports whether the process has exited, without waiting or
// reaping it.
func (h handle) hasExited() bool { return h.gone || isZombie(h.pid) }

// watch returns when the process has exited, without reaping it. If the
// kqueue fails, it falls back to polling the process's state.
func (h handle) watch() {
	defer unix.Close(h.kq)
	if h.gone {
		return
	}
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(h.kq, nil, out, nil)
		switch {
		case err == unix.EINTR || (err == nil && n == 0):
			continue
		case err == nil && out[0].Flags&unix.EV_ERROR == 0:
			return
		}
		for !isZombie(h.pid) {
			time.Sleep(10 * time.Millisecond)
		}
		return
	}
}

// isZombie reports whether pid has exited and awaits reaping. The pid is
// our unreaped child, so a failed lookup is transient: keep polling.
func isZombie(pid int) bool {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	return err == nil && k.Proc.P_stat == sZomb
}

// reply reads one framed launcher message from the stream socket; the
// darwin launcher sends no descriptors.
func (l *launcher) reply() (wire.Message, []int, error) {
	m, err := readStreamReply(l.sock)
	return m, nil, err
}

// tellOrigin tells nothing: macOS has no pid start time this broker reads
// (and no process-group search for survivors), so no Origin is recorded.
func tellOrigin(*launcher, func(Origin) error) error { return nil }

// Namespaces says why the protected paths cannot be bound read-only:
// macOS has no mount namespaces.
func Namespaces(string) string { return "macOS has no private mount namespaces" }

// UserNamespaces is false: macOS has none.
func UserNamespaces() bool { return false }
