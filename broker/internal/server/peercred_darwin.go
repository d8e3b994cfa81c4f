package server

import "golang.org/x/sys/unix"

// socketPeerUID reads LOCAL_PEERCRED (the effective uid).
func socketPeerUID(fd int) (uint32, error) {
	xc, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, err
	}
	return xc.Uid, nil
}
