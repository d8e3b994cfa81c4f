//go:build unix

package client

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// alive reports whether the broker still holds nc open. The broker closes
// connections idle past its timeout; peeking shows a pending EOF without
// sending anything, so no request is ever sent twice.
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
		n, _, rerr := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		open = rerr == unix.EAGAIN || (rerr == nil && n > 0)
		return true
	})
	return err == nil && open
}
