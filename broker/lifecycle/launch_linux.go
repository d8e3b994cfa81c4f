package lifecycle

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// handle is the launcher's pidfd.
type handle struct{ pidfd int }

// requestSocket is a close-on-exec SOCK_SEQPACKET pair: one request is one
// message, and so is each reply.
func requestSocket() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
}

func pipeCloexec() (p [2]int, err error) {
	err = unix.Pipe2(p[:], unix.O_CLOEXEC)
	return p, err
}

// spawn starts the launcher, inside the cgroup v2 cgroupFD unless it is
// -1 (its v1 cgroups are those of the calling thread: actionCgroup.launch),
// and takes a pidfd for it.
func spawn(path string, files []*os.File, cgroupFD int) (int, handle, error) {
	pidfd := -1
	sys := &syscall.SysProcAttr{PidFD: &pidfd}
	if userNS.Load() {
		inUserNS(sys)
	}
	if cgroupFD >= 0 {
		sys.UseCgroupFD, sys.CgroupFD = true, cgroupFD
	}
	pid, err := startProcess(path, files, sys)
	if err != nil {
		return 0, handle{}, err
	}
	if pidfd < 0 {
		unix.Kill(pid, unix.SIGKILL)
		unix.Wait4(pid, nil, 0, nil)
		return 0, handle{}, errors.New("start launcher: the kernel gave no pidfd")
	}
	return pid, handle{pidfd: pidfd}, nil
}

// userNS says that each launcher starts in a user namespace of its own
// (set once by Namespaces).
var userNS atomic.Bool

var namespaces struct {
	once sync.Once
	why  string // why no mount namespace can be made; "" when one can
}

// Namespaces says why a launcher started from path cannot make the
// private mount namespace in which the protected paths are bound
// read-only, or "" when it can. With CAP_SYS_ADMIN (a root broker) the
// launcher makes it itself. Otherwise every launcher is started in a user
// namespace of its own that maps only the broker's uid and gid (so the
// target is the same user, with no capability past the launcher's
// steps); the first call tries that once. Call it before any launch.
func Namespaces(path string) string {
	namespaces.once.Do(func() {
		if hasSysAdmin() {
			return
		}
		sys := &syscall.SysProcAttr{}
		inUserNS(sys)
		devnull, err := os.Open(os.DevNull)
		if err == nil {
			defer devnull.Close()
			// Without fd 3 the launcher refuses at once: only the
			// clone is tried.
			var pid int
			if pid, err = startProcess(path, []*os.File{devnull, devnull, devnull}, sys); err == nil {
				unix.Wait4(pid, nil, 0, nil)
			}
		}
		if err != nil {
			namespaces.why = fmt.Sprintf("this broker has no CAP_SYS_ADMIN and cannot start a process in a user namespace of its own (%v)", err)
			return
		}
		userNS.Store(true)
	})
	return namespaces.why
}

// UserNamespaces reports whether each launcher starts in a user
// namespace of its own (Namespaces decided so).
func UserNamespaces() bool { return userNS.Load() }

// inUserNS makes sys start its process in a new user namespace that maps
// only the caller's uid and gid, setgroups denied, holding CAP_SYS_ADMIN
// (for its mount namespace) and CAP_SETPCAP (for its securebits and
// bounding set) there across its exec, as ambient capabilities: the
// launcher drops every capability before the target's exec.
func inUserNS(sys *syscall.SysProcAttr) {
	sys.Cloneflags |= syscall.CLONE_NEWUSER
	sys.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	sys.GidMappingsEnableSetgroups = false
}

// hasSysAdmin reports whether this process holds CAP_SYS_ADMIN in its
// effective set.
func hasSysAdmin() bool {
	var data [2]unix.CapUserData
	err := unix.Capget(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0])
	return err == nil && data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

func (h handle) kill() { unix.PidfdSendSignal(h.pidfd, unix.SIGKILL, nil, 0) }

func (h handle) release() { unix.Close(h.pidfd) }

// hasExited reports whether the process has exited, without waiting or
// reaping it.
func (h handle) hasExited() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PIDFD, h.pidfd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0
}

// watch returns when the process has exited. It does not reap it
// (WNOWAIT): the zombie keeps the process group id from being reused while
// the rest of the group is signalled. Like reap, it retries EINTR without
// bound.
func (h handle) watch() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PIDFD, h.pidfd, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// replyBufs holds the buffers replies are read into: one must hold the
// largest frame, and allocating and zeroing that for each of the two reads
// of every launch cost more than a tenth of a millisecond each. Nothing
// past the bytes read is ever looked at, and the decoded message does not
// alias the buffer.
var replyBufs = sync.Pool{New: func() any { b := make([]byte, wire.MaxLauncherFrame+8); return &b }}

// reply reads one launcher message and the descriptors sent with it (only
// Ready may carry one: the seccomp listener; the caller owns them). io.EOF
// means the launcher's end of the socket is closed: after Ready, that is
// the proof of a successful exec.
func (l *launcher) reply() (wire.Message, []int, error) {
	bp := replyBufs.Get().(*[]byte)
	defer replyBufs.Put(bp)
	buf := *bp
	oob := make([]byte, unix.CmsgSpace(4*8))
	l.sock.SetReadDeadline(time.Now().Add(replyBound))
	n, oobn, flags, _, err := l.sock.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, nil, fmt.Errorf("read launcher reply: %w", err)
	}
	fds, err := rights(oob[:oobn])
	if err != nil {
		return nil, nil, fmt.Errorf("read launcher reply: %w", err)
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeFDs(fds)
		return nil, nil, errors.New("read launcher reply: truncated")
	}
	if n == 0 {
		if len(fds) > 0 {
			closeFDs(fds)
			return nil, nil, errors.New("read launcher reply: descriptors without a message")
		}
		return nil, nil, io.EOF
	}
	m, err := wire.DecodeFrame(buf[:n], wire.MaxLauncherFrame, wire.LauncherChannel)
	if err != nil {
		closeFDs(fds)
		return nil, nil, err
	}
	return m, fds, nil
}

// rights returns the descriptors of SCM_RIGHTS messages in oob; anything
// else in it is an error (its descriptors closed).
func rights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse control message: %w", err)
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			closeRights(oob)
			return nil, errors.New("a control message that is not SCM_RIGHTS")
		}
		fds = append(fds, got...)
	}
	return fds, nil
}
