package lifecycle

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// replyBound bounds each wait for a launcher reply. The launcher does
// bounded work (at most hashing a 512 MiB executable) before it replies.
const replyBound = 30 * time.Second

// launcher is a started launcher process and the broker's ends of its fds.
type launcher struct {
	pid    int
	pidfd  int
	sock   *net.UnixConn
	stdout *os.File
	stderr *os.File
}

// start creates the request socketpair and the output pipes, starts the
// launcher with fd 3 = its end of the socket, an empty environment and
// /dev/null as stdio, and sends the request with its fds. On error nothing
// is left running.
func start(spec *Spec, cg *actionCgroup) (l *launcher, err error) {
	frame, err := wire.EncodeFrame(spec.Request)
	if err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("create request socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "launcher-request"), os.NewFile(uintptr(pair[1]), "launcher-request")
	defer theirs.Close()
	outR, outW, err := pipe()
	if err != nil {
		ours.Close()
		return nil, err
	}
	defer outW.Close()
	errR, errW, err := pipe()
	if err != nil {
		ours.Close()
		outR.Close()
		return nil, err
	}
	defer errW.Close()
	defer func() {
		if err != nil {
			ours.Close()
			outR.Close()
			errR.Close()
		}
	}()

	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	pidfd := -1
	sys := &syscall.SysProcAttr{PidFD: &pidfd}
	if cg != nil {
		sys.UseCgroupFD, sys.CgroupFD = true, cg.fd
	}
	p, err := os.StartProcess(spec.Launcher, []string{"warrant-launcher"}, &os.ProcAttr{
		Dir: "/", Env: []string{}, Sys: sys,
		Files: []*os.File{devnull, devnull, devnull, theirs},
	})
	if err != nil {
		return nil, fmt.Errorf("start launcher: %w", err)
	}
	pid := p.Pid
	p.Release() // the pidfd below is the handle; os keeps no duplicate
	if pidfd < 0 {
		unix.Kill(pid, unix.SIGKILL)
		unix.Wait4(pid, nil, 0, nil)
		return nil, errors.New("start launcher: the kernel gave no pidfd")
	}
	l = &launcher{pid: pid, pidfd: pidfd, stdout: outR, stderr: errR}

	fds := []int{int(spec.Workspace.Fd()), int(outW.Fd()), int(errW.Fd())}
	for _, s := range spec.Snapshots {
		fds = append(fds, int(s.Fd()))
	}
	if err := unix.Sendmsg(int(ours.Fd()), frame, unix.UnixRights(fds...), nil, 0); err != nil {
		l.abandon()
		return nil, fmt.Errorf("send spawn request: %w", err)
	}
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		l.abandon()
		return nil, fmt.Errorf("wrap request socket: %w", err)
	}
	l.sock = conn.(*net.UnixConn)
	return l, nil
}

// pipe returns a pipe whose read end is non-blocking (pollable, so reads
// can have deadlines) and whose write end, handed to the target, is
// blocking: O_NONBLOCK is per open file description, so the target's
// writes behave normally.
func pipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("create output pipe: %w", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, fmt.Errorf("create output pipe: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "output"), os.NewFile(uintptr(p[1]), "output"), nil
}

// reply reads one launcher message. io.EOF means the launcher's end of the
// socket is closed: after Ready, that is the proof of a successful exec.
func (l *launcher) reply() (wire.Message, error) {
	buf := make([]byte, wire.MaxLauncherFrame+8)
	oob := make([]byte, unix.CmsgSpace(4*8))
	l.sock.SetReadDeadline(time.Now().Add(replyBound))
	n, oobn, flags, _, err := l.sock.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("read launcher reply: %w", err)
	}
	if oobn > 0 {
		closeRights(oob[:oobn])
		return nil, errors.New("read launcher reply: the launcher sent descriptors")
	}
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return nil, errors.New("read launcher reply: truncated")
	}
	if n == 0 {
		return nil, io.EOF
	}
	return wire.DecodeFrame(buf[:n], wire.MaxLauncherFrame, wire.LauncherChannel)
}

// closeRights closes every descriptor carried in a control message.
func closeRights(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if fds, err := unix.ParseUnixRights(&m); err == nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
}

// abandon kills and reaps a launcher that never reached exec, and closes
// everything. Only for a launcher that has not sent Ready: before Ready it
// has not called setsid, and it has started nothing.
func (l *launcher) abandon() {
	unix.PidfdSendSignal(l.pidfd, unix.SIGKILL, nil, 0)
	l.reap()
	l.close()
}

// reap waits for the launcher (or the target it became) and returns its
// wait status.
func (l *launcher) reap() unix.WaitStatus {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(l.pid, &ws, 0, nil)
		if err != unix.EINTR {
			return ws
		}
	}
}

func (l *launcher) close() {
	if l.sock != nil {
		l.sock.Close()
	}
	l.stdout.Close()
	l.stderr.Close()
	unix.Close(l.pidfd)
}
