package linux

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// The seccomp policy lives in seccompgen, which compiles it with libseccomp
// at build time: compiling it on every launch cost about 1 ms, most of the
// launcher's own time. The programs are embedded per architecture
// (seccomp_GOARCH_linux.go); seccompgen's test proves them byte-identical
// to libseccomp's output and seccomp_GOARCH.txt disassembles them.
//go:generate go run ./seccompgen

// installSeccomp performs step 10, last: it loads the embedded programs as
// they are (the argument filter first, then the main filter) and returns
// the SHA-256 of their concatenation and the main filter's notification
// listener, which the broker answers for the metadata calls and the named
// denials (seccompgen's notified and denied lists), and with hints the
// write-intent opens, which it lets continue. An architecture without
// generated programs is refused.
func installSeccomp(hints bool) (digest []byte, listener int, err error) {
	programs := programs(hints)
	if len(programs) == 0 {
		return nil, -1, wire.Errorf(wire.CodeSandboxUnavailable, "no seccomp programs were generated for this architecture")
	}
	h := sha256.New()
	for _, p := range programs {
		h.Write(p)
	}
	listener = -1
	for i, p := range programs {
		insns, err := decodeBPF(p)
		if err != nil {
			panic("linux: internal error: embedded seccomp program: " + err.Error())
		}
		var flags uintptr
		if i == len(programs)-1 {
			flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
		}
		fd, err := seccompLoad(insns, flags)
		if err != nil {
			return nil, -1, wire.Errorf(wire.CodeSandboxUnavailable, "load the seccomp filter: %v", err)
		}
		if flags != 0 {
			listener = fd
		}
	}
	return h.Sum(nil), listener, nil
}

// decodeBPF turns exported bytes (host byte order) into instructions.
func decodeBPF(p []byte) ([]unix.SockFilter, error) {
	const insnSize = 8
	if len(p) == 0 || len(p)%insnSize != 0 || len(p)/insnSize > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("a program of %d bytes is not a BPF program", len(p))
	}
	insns := make([]unix.SockFilter, len(p)/insnSize)
	for i := range insns {
		b := p[i*insnSize:]
		insns[i] = unix.SockFilter{Code: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
	}
	return insns, nil
}
