package broker

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID returns the effective uid of the process at the other end of c
// (LOCAL_PEERCRED, recorded by the kernel at connect time).
func peerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var xc *unix.Xucred
	var serr error
	if err := raw.Control(func(fd uintptr) { xc, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED) }); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return xc.Uid, nil
}
