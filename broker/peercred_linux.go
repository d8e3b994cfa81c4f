package broker

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID returns the uid of the process at the other end of c
// (SO_PEERCRED, recorded by the kernel at connect time).
func peerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var uc *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) { uc, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return uc.Uid, nil
}
