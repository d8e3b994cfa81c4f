package server

import "golang.org/x/sys/unix"

// socketPeerUID reads SO_PEERCRED.
func socketPeerUID(fd int) (uint32, error) {
	uc, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return 0, err
	}
	return uc.Uid, nil
}
