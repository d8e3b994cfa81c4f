package linux

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// answerContinue lets every call notified on listener go through, as a
// target that held a listener of its own could.
func answerContinue(listener int) {
	for {
		var n seccompNotif
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n))); e != 0 {
			if e == unix.EINTR {
				continue
			}
			return
		}
		r := seccompResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&r)))
	}
}

// sendmmsgTo sends one message of one byte to addr:port with sendmmsg.
func sendmmsgTo(fd int, addr [4]byte, port int, flags int) error {
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Port: uint16(port)<<8 | uint16(port)>>8, Addr: addr}
	data := []byte("x")
	iov := unix.Iovec{Base: &data[0], Len: 1}
	msgs := []unix.Mmsghdr{{Hdr: unix.Msghdr{Name: (*byte)(unsafe.Pointer(&sa)), Namelen: unix.SizeofSockaddrInet4,
		Iov: &iov, Iovlen: 1}}}
	_, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), 1, uintptr(flags), 0, 0)
	runtime.KeepAlive(sa)
	runtime.KeepAlive(data)
	if e != 0 {
		return e
	}
	return nil
}
