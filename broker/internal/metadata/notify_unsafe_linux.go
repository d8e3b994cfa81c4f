package metadata

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp user-notification ABI (linux/seccomp.h); x/sys/unix has the
// ioctl numbers for receiving and sending but not the structures.

// seccompData is struct seccomp_data.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// notif is struct seccomp_notif.
type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// notifResp is struct seccomp_notif_resp.
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32 // SECCOMP_USER_NOTIF_FLAG_CONTINUE for an egress socket() alone
}

// ioctlNotifIDValid is SECCOMP_IOCTL_NOTIF_ID_VALID, _IOW('!', 2, __u64),
// and ioctlNotifSetFlags SECCOMP_IOCTL_NOTIF_SET_FLAGS, _IOW('!', 4, __u64).
const (
	ioctlNotifIDValid  = 0x40082102
	ioctlNotifSetFlags = 0x40082104
)

func init() {
	if unsafe.Sizeof(notif{}) != 80 || unsafe.Sizeof(notifResp{}) != 24 {
		panic("metadata: internal error: seccomp notification structures have the wrong size")
	}
}

// recv receives one notification; the structure must be zeroed first.
func recv(listener int, n *notif) error {
	*n = notif{}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(n)))
	if e != 0 {
		return e
	}
	return nil
}

// send answers notification id with r: -errno, or val when errno is 0,
// or the call itself continued.
func send(listener int, id uint64, r reply) error {
	resp := notifResp{ID: id, Val: r.val, Error: -int32(r.errno)}
	if r.cont {
		resp = notifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
	if e != 0 {
		return e
	}
	return nil
}

// idValid reports whether notification id is still pending: its caller
// has not died (so its pid has not been reused) since it was received.
func idValid(listener int, id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), ioctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// syncWakeUp asks the kernel to switch between the caller and the server
// on one CPU (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6): an answer
// then wakes its caller where the server runs, without waking another
// CPU, which in a virtual machine cost the server five times the CPU of
// the answer itself. An older kernel keeps the ordinary wake-up.
func syncWakeUp(listener int) {
	unix.Syscall(unix.SYS_IOCTL, uintptr(listener), ioctlNotifSetFlags, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
}
