package server

import "net"

// peerUID returns the uid of the process at the other end of c, as the
// kernel recorded it at connect time.
func peerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var uid uint32
	var serr error
	if err := raw.Control(func(fd uintptr) { uid, serr = socketPeerUID(int(fd)) }); err != nil {
		return 0, err
	}
	return uid, serr
}
