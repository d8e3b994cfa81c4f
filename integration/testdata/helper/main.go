// Command helper is the static target program of the integration tests.
// Each subcommand makes one attempt and prints what happened, as
// "ok ..." or "errno NAME", so that the test can compare and the host can
// check the object afterwards.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage: helper CMD ARGS...")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "status": // fd table, then /proc/self/status
		fmt.Printf("fds %s\n", openFDs())
		b, err := os.ReadFile("/proc/self/status")
		report(err)
		os.Stdout.Write(b)
	case "exe": // where the program runs from, as the program sees it
		p, err := os.Executable()
		report(err)
		fmt.Println(p)
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
	case "write":
		report(os.WriteFile(args[0], []byte(args[1]), 0o644))
	case "read":
		b, err := os.ReadFile(args[0])
		report(err)
		os.Stdout.Write(b)
	case "truncate":
		report(unix.Truncate(args[0], 0))
	case "link":
		report(unix.Link(args[0], args[1]))
	case "socket":
		fd, err := unix.Socket(num(args[0]), num(args[1]), num(args[2]))
		if err == nil {
			err = connect(fd, args[3:])
		}
		report(err)
	case "socketpair":
		_, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		report(err)
	case "kill":
		report(unix.Kill(num(args[0]), syscall.Signal(num(args[1]))))
	case "ioctl": // FD CMD
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(num(args[0])), uintptr(unum(args[1])), 0)
		report(errOf(e))
	case "syscall": // NR ARGS... (numbers; "ptr" passes a zeroed buffer)
		report(rawSyscall(args))
	case "mount": // TARGET: a tmpfs over it
		report(unix.Mount("tmpfs", args[0], "tmpfs", 0, ""))
	case "exec":
		report(unix.Exec(args[0], args[0:], os.Environ()))
	default:
		fmt.Printf("unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// report prints "ok" or "errno NAME" (the symbolic name of the errno).
func report(err error) {
	if err == nil {
		fmt.Println("ok")
		return
	}
	if pe, ok := err.(*os.PathError); ok {
		err = pe.Err
	}
	if se, ok := err.(*os.SyscallError); ok {
		err = se.Err
	}
	if en, ok := err.(syscall.Errno); ok {
		fmt.Printf("errno %s\n", unix.ErrnoName(en))
		return
	}
	fmt.Printf("error %v\n", err)
}

func errOf(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// openFDs lists open descriptors without opening any (no directory read).
func openFDs() string {
	var open []string
	for fd := 0; fd < 1024; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			open = append(open, strconv.Itoa(fd))
		}
	}
	return strings.Join(open, ",")
}

func connect(fd int, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if strings.HasPrefix(args[0], "unix:") {
		return unix.Connect(fd, &unix.SockaddrUnix{Name: args[0][5:]})
	}
	return unix.Connect(fd, &unix.SockaddrInet4{Port: num(args[0]), Addr: [4]byte{127, 0, 0, 1}})
}

func rawSyscall(args []string) error {
	var a [6]uintptr
	buf := make([]byte, 4096)
	for i, s := range args[1:] {
		if s == "ptr" {
			a[i] = uintptr(unsafe.Pointer(&buf[0]))
			continue
		}
		a[i] = uintptr(unum(s))
	}
	_, _, e := unix.Syscall6(uintptr(unum(args[0])), a[0], a[1], a[2], a[3], a[4], a[5])
	runtime.KeepAlive(buf)
	return errOf(e)
}

func num(s string) int {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		fmt.Printf("bad number %q\n", s)
		os.Exit(2)
	}
	return int(n)
}

func unum(s string) uint64 {
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		fmt.Printf("bad number %q\n", s)
		os.Exit(2)
	}
	return n
}
