package darwin

import (
	"fmt"
	"syscall"
	"unsafe"
)

// sandbox_init(3) is called from pure Go, without cgo, the way
// golang.org/x/sys/unix calls libSystem: the symbol is imported with
// //go:cgo_import_dynamic, a one-instruction assembly trampoline jumps to
// it, and the runtime's syscall.syscall (exported for exactly this use)
// switches to the system stack and calls the trampoline. sandbox_init
// lives in libsystem_sandbox, which libSystem.B re-exports.

//go:cgo_import_dynamic libc_sandbox_init sandbox_init "/usr/lib/libSystem.B.dylib"

var libc_sandbox_init_trampoline_addr uintptr

//go:linkname syscall_syscall syscall.syscall
func syscall_syscall(fn, a1, a2, a3 uintptr) (r1, r2 uintptr, err syscall.Errno)

// maxSandboxError bounds how much of libsandbox's error text is copied.
const maxSandboxError = 1024

// applyProfile confines the calling process, and everything it executes,
// to the SBPL profile. flags 0 means profile is SBPL source, not the name
// of a built-in profile. There is no undo and no fallback: on error the
// caller refuses and exits.
func applyProfile(profile string) error {
	src := append([]byte(profile), 0)
	var errbuf *byte
	r1, _, errno := syscall_syscall(libc_sandbox_init_trampoline_addr,
		uintptr(unsafe.Pointer(&src[0])), 0, uintptr(unsafe.Pointer(&errbuf)))
	if int32(r1) == 0 {
		return nil
	}
	return fmt.Errorf("sandbox_init: %s (%v)", cString(errbuf), errno)
}

// cString copies the NUL-terminated C string at p, at most maxSandboxError
// bytes. libsandbox allocates it; the launcher exits soon after, so it is
// not freed.
func cString(p *byte) string {
	if p == nil {
		return "no error text"
	}
	var out []byte
	for i := uintptr(0); i < maxSandboxError; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		out = append(out, c)
	}
	return string(out)
}
