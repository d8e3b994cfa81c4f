package linux

import (
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
