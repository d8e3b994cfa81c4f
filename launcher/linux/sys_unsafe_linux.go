package linux

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds every system call of the launcher that passes a pointer
// to the kernel by hand. Each wrapper keeps its Go values alive for the
// duration of the call and nothing else.

// seccompLoad installs one classic BPF program on the calling thread
// (no TSYNC: the exec happens on it). With SECCOMP_FILTER_FLAG_NEW_LISTENER
// it returns the filter's notification listener (close-on-exec), else 0.
func seccompLoad(prog []unix.SockFilter, flags uintptr) (int, error) {
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags,
		uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// kernelSigaction is large enough for every layout of the kernel's struct
// sigaction; the handler is the first word in all of them.
type kernelSigaction struct{ handler, flags, restorer, mask uint64 }

const sigIgn = 1

// unignoreSignal sets sig back to SIG_DFL when it is ignored.
func unignoreSignal(sig int) error {
	var old kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0,
		uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return e
	}
	if old.handler != sigIgn {
		return nil
	}
	var dfl kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0); e != 0 {
		return e
	}
	return nil
}

// execveat runs the program in fd and returns only on failure.
func execveat(fd int, argv, env []string) unix.Errno {
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return unix.EINVAL
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return unix.EINVAL
	}
	empty := [1]byte{}
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	return e
}
