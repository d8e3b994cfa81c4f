//go:build linux && amd64

// Command faultwrap runs a program as on a host that lacks one mechanism
// egress leases need, for the capability probe's tests: a seccomp
// filter, inherited by everything the program starts, makes the kernel
// answer one call as such a host does.
//
//	faultwrap pidfd-thread PROGRAM ARG...  pidfd_open with PIDFD_THREAD is EINVAL (Linux before 6.9)
//	faultwrap pidfd-getfd PROGRAM ARG...   pidfd_getfd is EPERM (ptrace access refused: Yama, an LSM)
//	faultwrap none PROGRAM ARG...          no filter
package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The offsets of struct seccomp_data: nr, arch, and the low half of
// args[1] (little-endian).
const (
	offNr    = 0
	offArch  = 4
	offArg1  = 16 + 8
	thisArch = 0xc000003e // AUDIT_ARCH_X86_64
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// filter is the program for fault: its last two instructions allow, and
// refuse with the fault's errno.
func filter(fault string) ([]unix.SockFilter, error) {
	ld := uint16(unix.BPF_LD | unix.BPF_W | unix.BPF_ABS)
	head := []unix.SockFilter{stmt(ld, offArch), jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, thisArch, 0, 0), stmt(ld, offNr)}
	var body []unix.SockFilter
	var errno unix.Errno
	switch fault {
	case "pidfd-thread":
		body = []unix.SockFilter{jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_PIDFD_OPEN, 0, 0), stmt(ld, offArg1),
			jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, unix.PIDFD_THREAD, 0, 0)}
		errno = unix.EINVAL
	case "pidfd-getfd":
		body = []unix.SockFilter{jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_PIDFD_GETFD, 0, 0)}
		errno = unix.EPERM
	default:
		return nil, fmt.Errorf("unknown fault %q", fault)
	}
	prog := append(head, body...)
	allow := len(prog)
	prog = append(prog, stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW),
		stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|uint32(errno)))
	// Every jump's false branch allows; the last one's true branch
	// refuses, every other's goes on.
	for i := range prog[:allow] {
		if prog[i].Code&0x07 != unix.BPF_JMP { // its class
			continue
		}
		prog[i].Jf = uint8(allow - i - 1)
		if i == allow-1 {
			prog[i].Jt = uint8(allow + 1 - i - 1)
		}
	}
	return prog, nil
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: faultwrap pidfd-thread|pidfd-getfd|none PROGRAM ARG...")
		os.Exit(2)
	}
	runtime.LockOSThread()
	if os.Args[1] != "none" {
		prog, err := filter(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "faultwrap:", err)
			os.Exit(2)
		}
		if os.Geteuid() != 0 {
			if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
				fmt.Fprintln(os.Stderr, "faultwrap: no_new_privs:", err)
				os.Exit(2)
			}
		}
		fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
			uintptr(unsafe.Pointer(&fp))); errno != 0 {
			fmt.Fprintln(os.Stderr, "faultwrap: seccomp:", errno)
			os.Exit(2)
		}
	}
	err := syscall.Exec(os.Args[2], os.Args[2:], os.Environ())
	fmt.Fprintln(os.Stderr, "faultwrap: exec:", err)
	os.Exit(2)
}
