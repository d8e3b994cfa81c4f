//go:build linux || darwin

package lifecycle

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
	"warrant/wire"
)

// replyBound bounds each wait for a launcher reply. The launcher does
// bounded work (at most hashing a 512 MiB executable) before it replies.
const replyBound = 30 * time.Second

// launcher is a started launcher process and the broker's ends of its fds.
type launcher struct {
	pid    int
	h      handle        // the platform's hold on the unreaped process
	exited chan struct{} // closed when the root has exited (not reaped)
	exitAt time.Time     // when it was seen to exit; read only after exited is closed
	req    *os.File      // the request socket until the request is sent; then nil
	sock   *net.UnixConn // the same socket, for the replies, once the request is sent
	stdout *os.File      // nil until the launcher is given an action
	stderr *os.File
	origin *Origin // read when a slot was made (Linux); nil: read when it is needed
}

// start takes warm, the launcher setup took already in the action's
// cgroups, or starts one there (osState.launch), gives it the action's
// output pipes, sends the request with its fds and tells spec.OnLaunch
// the launcher's Origin while it confines itself: it executes nothing
// before Proceed (handshake). On error nothing is left running.
func start(spec *Spec, o *osState, warm *launcher) (l *launcher, err error) {
	frame, err := wire.EncodeFrame(spec.Request)
	if err != nil {
		if warm != nil {
			warm.abandon()
		}
		return nil, err
	}
	l = warm
	if l == nil {
		if l, err = o.launch(spec.Launcher); err != nil {
			return nil, err
		}
	}
	started := l // every error return below sets l to nil
	defer func() {
		if err != nil {
			started.abandon()
		}
	}()
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	defer outW.Close()
	l.stdout = outR
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	defer errW.Close()
	l.stderr = errR
	fds := []int{int(spec.Workspace.Fd()), int(outW.Fd()), int(errW.Fd())}
	for _, s := range spec.Snapshots {
		fds = append(fds, int(s.Fd()))
	}
	if err = sendRequest(int(l.req.Fd()), frame, unix.UnixRights(fds...)); err != nil {
		return nil, fmt.Errorf("send spawn request: %w", err)
	}
	conn, err := net.FileConn(l.req)
	l.req.Close()
	l.req = nil
	if err != nil {
		return nil, fmt.Errorf("wrap request socket: %w", err)
	}
	l.sock = conn.(*net.UnixConn)
	if err = tellOrigin(l, spec.OnLaunch); err != nil {
		return nil, err
	}
	return l, nil
}

// spoke reports whether a launcher that waits for its request has sent
// something or closed its end: it refused its Prepare, and its exit may
// not be seen yet.
func (l *launcher) spoke() bool {
	var b [1]byte
	_, _, err := unix.Recvfrom(int(l.req.Fd()), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err != unix.EAGAIN
}

// startLauncher starts the launcher with fd 3 = its end of a new request
// socket, LauncherEnv and /dev/null as stdio, inside the cgroup v2
// cgroupFD when it is not -1, and watches for its exit. It runs nothing
// until it is sent a request.
func startLauncher(path string, cgroupFD int) (*launcher, error) {
	pair, err := requestSocket()
	if err != nil {
		return nil, fmt.Errorf("create request socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "launcher-request"), os.NewFile(uintptr(pair[1]), "launcher-request")
	defer theirs.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	pid, h, err := spawn(path, []*os.File{devnull, devnull, devnull, theirs}, cgroupFD)
	if err != nil {
		ours.Close()
		return nil, err
	}
	l := &launcher{pid: pid, h: h, exited: make(chan struct{}), req: ours}
	go func() {
		h.watch()
		l.exitAt = time.Now()
		close(l.exited)
	}()
	return l, nil
}

// startProcess starts the launcher binary with no arguments but its name,
// LauncherEnv(), cwd "/" and exactly files as fds 0…n-1, and returns its
// pid. The caller owns the unreaped child.
func startProcess(path string, files []*os.File, sys *syscall.SysProcAttr) (int, error) {
	p, err := os.StartProcess(path, []string{"warrant-launcher"}, &os.ProcAttr{
		Dir: "/", Env: LauncherEnv(), Sys: sys, Files: files,
	})
	if err != nil {
		return 0, fmt.Errorf("start launcher: %w", err)
	}
	pid := p.Pid
	p.Release() // the platform handle is the hold; os keeps no duplicate
	return pid, nil
}

// LauncherEnv is the launcher's own environment, which the target never
// sees (it is given the request's): GOMAXPROCS=1, one P for the Go
// runtime. The launcher runs on one locked thread and starts no
// goroutine; with a P per core its runtime kept more threads, each of
// which execve must kill and wait for. BenchmarkLaunchTrue/warm, the two
// settings taking turns on this 2-core machine: launcher p50 2.07–2.12 ms
// with it against 2.20–2.43 ms without, 2.57–2.66 against 2.83–2.96 times
// bare os/exec.
func LauncherEnv() []string { return []string{"GOMAXPROCS=1"} }

// sendRequest sends frame with rights attached to its first byte, then the
// rest of the frame if a stream socket took only part of it (a
// SOCK_SEQPACKET socket takes all or nothing).
func sendRequest(fd int, frame, rights []byte) error {
	var n int
	err := retry.EINTR(func() (err error) {
		n, err = unix.SendmsgN(fd, frame, rights, nil, 0)
		return err
	})
	for err == nil && n < len(frame) {
		var k int
		err = retry.EINTR(func() (err error) {
			k, err = unix.Write(fd, frame[n:])
			return err
		})
		n += k
	}
	return err
}

// pipe returns a close-on-exec pipe whose read end is non-blocking
// (pollable, so reads can have deadlines) and whose write end, handed to
// the target, is blocking: O_NONBLOCK is per open file description, so the
// target's writes behave normally.
func pipe() (r, w *os.File, err error) {
	p, err := pipeCloexec()
	if err != nil {
		return nil, nil, fmt.Errorf("create output pipe: %w", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, fmt.Errorf("create output pipe: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "output"), os.NewFile(uintptr(p[1]), "output"), nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
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
	l.h.kill()
	l.reap()
	l.close()
}

// reap waits for the launcher (or the target it became) and returns its
// wait status, or why there is none (ECHILD: something else reaped it;
// the status is then unknown, never a zero one read as exit 0). A wait is
// not bounded like retry's calls: giving up would report an exit that
// did not happen.
func (l *launcher) reap() (unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(l.pid, &ws, 0, nil)
		if err != unix.EINTR {
			return ws, err
		}
	}
}

func (l *launcher) close() {
	if l.sock != nil {
		l.sock.Close()
	}
	for _, f := range []*os.File{l.req, l.stdout, l.stderr} {
		if f != nil {
			f.Close()
		}
	}
	l.h.release()
}
