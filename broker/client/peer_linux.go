package client

import (
	"bytes"
	"net"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
)

// peerStopped reports whether the process at the other end of nc (the
// broker, by SO_PEERCRED) is stopped — by SIGSTOP or a job-control stop
// — as /proc/PID/stat shows it ("T"), and its pid. A broker the kernel
// shows stopped answers nothing until it is resumed, so nothing is sent
// to it; one that is merely busy runs and is waited for. A tracing stop
// ("t") is not counted: under strace it is momentary at every system
// call. A peer this process cannot see is not stopped.
func peerStopped(nc net.Conn) (int, bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	rc.Control(func(fd uintptr) { cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cred == nil || cred.Pid <= 0 {
		return 0, false
	}
	stat, ok := procStat(int(cred.Pid))
	if !ok {
		return 0, false
	}
	// The state is the field after the command name, which ends at the
	// last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0, false
	}
	st := stat[i+2]
	return int(cred.Pid), st == 'T'
}

// procStat is the start of /proc/PID/stat (the state is within its first
// few dozen bytes), in one read: every request checks its broker.
func procStat(pid int) ([]byte, bool) {
	var fd, n int
	err := retry.EINTR(func() (err error) {
		fd, err = unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	var buf [1024]byte
	if err := retry.EINTR(func() (err error) { n, err = unix.Read(fd, buf[:]); return err }); err != nil || n <= 0 {
		return nil, false
	}
	return buf[:n], true
}
