package probeprog

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"
)

// forkPast forks children that wait for a signal, until a fork fails or
// PidsTry were made, and reports "pids pids_limit failed forked=N errno
// E" (or done when every fork succeeded: the limit did not bind). The
// children are ended with the action's group.
//
// The runtime must not need a thread while the limit is reached (it
// cannot survive failing to make one), so the program first gives up
// parallelism and garbage collection, and forks with a raw clone whose
// child makes no call into the runtime at all.
func forkPast() {
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(-1)
	runtime.LockOSThread()
	n, errno := 0, syscall.Errno(0)
	for n < PidsTry {
		if errno = rawFork(); errno != 0 {
			break
		}
		n++
	}
	if errno == 0 {
		fmt.Printf("%s %s done forked=%d\n", PidsProber, PidsLimit, n)
		return
	}
	fmt.Printf("%s %s failed forked=%d errno %s\n", PidsProber, PidsLimit, n, unix.ErrnoName(errno))
}

// rawFork clones this process without the runtime knowing; the child
// only waits in pause(2) until it is killed.
//
//go:nosplit
//go:norace
func rawFork() syscall.Errno {
	pid, _, errno := syscall.RawSyscall(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0)
	if errno != 0 {
		return errno
	}
	if pid == 0 {
		for {
			syscall.RawSyscall(syscall.SYS_PAUSE, 0, 0, 0)
		}
	}
	return 0
}

// allocPast maps and touches memory a mebibyte at a time up to MemoryTry
// and reports "memory memory_limit done touched=N" if it got there (the
// limit did not bind); at the limit the kernel kills it first.
func allocPast() {
	fmt.Printf("%s %s started\n", MemoryProber, MemoryLimit)
	const chunk = 1 << 20
	touched := 0
	for touched < MemoryTry {
		b, err := unix.Mmap(-1, 0, chunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			fmt.Printf("%s %s failed touched=%d %s\n", MemoryProber, MemoryLimit, touched, errText(err))
			return
		}
		for i := 0; i < chunk; i += 4096 {
			b[i] = 1
		}
		touched += chunk
	}
	fmt.Printf("%s %s done touched=%d\n", MemoryProber, MemoryLimit, touched)
}
