//go:build unix

package client

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// alive reports whether the broker still holds nc open and has nothing
// pending on it. The broker closes connections idle past its timeout, and
// evicts idle ones for new connections with a BUSY notice; peeking shows
// a pending EOF, or such a notice, without sending anything, so no
// request is ever sent twice. Between requests nothing else can be
// pending: every reply answers one request.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = rerr == unix.EAGAIN
		return true
	})
	return err == nil && open
}
