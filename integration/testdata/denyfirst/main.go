// Command denyfirst runs a command under one more seccomp filter, for the
// benchmark of the broker's denial counting (integration
// BenchmarkDenialObservers): "off" refuses, in the kernel, every call the
// launcher's filter notifies only to have it counted (seccompgen's denied
// list and clone with a namespace flag), with the errno the broker
// answers (EPERM; ENOSYS for clone), so that the broker sees none of
// them, as before they were counted; "on" is the same program allowing
// them, so that both arms pay for one more filter alike.
//
//	denyfirst on|off PROGRAM ARGS...
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// counted are the calls the launcher's main filter notifies to be
// refused and counted (amd64).
var counted = []uint32{unix.SYS_SOCKET, unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER, unix.SYS_BPF,
	unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE,
	unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_CHROOT, unix.SYS_SETSID, unix.SYS_SETPGID, unix.SYS_PIDFD_GETFD, unix.SYS_ACCT, unix.SYS_SWAPON,
	unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_QUOTACTL, unix.SYS_SYSLOG, unix.SYS_VHANGUP, unix.SYS_IOPL,
	unix.SYS_IOPERM, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_LOOKUP_DCOOKIE, unix.SYS_BIND, unix.SYS_FANOTIFY_INIT, unix.SYS_FANOTIFY_MARK}

const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jeq(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jt, Jf: jf, K: k}
}

// program refuses the counted calls with deny's errnos, or allows them
// (on): the same instructions either way.
func program(off bool) []unix.SockFilter {
	perm, nosys := uint32(unix.SECCOMP_RET_ALLOW), uint32(unix.SECCOMP_RET_ALLOW)
	if off {
		perm, nosys = unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM), unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)
	}
	n := len(counted)
	// Layout: arch check, the number, one jump per counted call, the clone
	// check, then: allow, perm, nosys.
	p := []unix.SockFilter{
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 4),
		jeq(unix.AUDIT_ARCH_X86_64, 0, uint8(n+4)), // to allow
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 0),
	}
	for i, nr := range counted {
		p = append(p, jeq(nr, uint8(n-i+3), 0)) // to perm
	}
	p = append(p,
		jeq(unix.SYS_CLONE, 0, 2), // not clone: to allow
		stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, 16),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, Jt: 2, Jf: 0, K: namespaceFlags}, // to nosys
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(unix.BPF_RET|unix.BPF_K, perm),
		stmt(unix.BPF_RET|unix.BPF_K, nosys),
	)
	return p
}

func main() {
	if len(os.Args) < 3 || (os.Args[1] != "on" && os.Args[1] != "off") {
		fmt.Fprintln(os.Stderr, "usage: denyfirst on|off PROGRAM ARGS...")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "denyfirst:", err)
		os.Exit(127)
	}
	insns := program(os.Args[1] == "off")
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "denyfirst: no_new_privs:", err)
		os.Exit(126)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); e != 0 {
		fmt.Fprintln(os.Stderr, "denyfirst: load the filter:", e)
		os.Exit(126)
	}
	err = syscall.Exec(path, os.Args[2:], os.Environ())
	fmt.Fprintln(os.Stderr, "denyfirst:", err)
	os.Exit(126)
}
