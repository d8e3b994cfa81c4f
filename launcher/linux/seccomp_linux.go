package linux

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// The policy is seccompgen's, compiled with libseccomp at build time (1 ms
// a launch otherwise) and embedded per architecture: its test proves the
// bytes are libseccomp's output; seccomp_GOARCH.txt disassembles them.
//go:generate go run ./seccompgen

// installArgs performs step 1's part of the policy: no_new_privs and the
// argument program, which refuses no call the launcher's steps make (step
// 10 refuses an architecture without programs).
func installArgs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "set no_new_privs: %v", err)
	}
	if p := programs(false); len(p) > 0 {
		_, err := load(p[0], 0)
		return err
	}
	return nil
}

// installSeccomp performs step 10, last: it loads the main program and
// returns the SHA-256 of both programs and the main one's listener, which
// the broker answers for seccompgen's notified and denied calls, and with
// hints the write-intent opens, which it lets continue.
func installSeccomp(hints bool) (digest []byte, listener int, err error) {
	programs := programs(hints)
	if len(programs) == 0 {
		return nil, -1, wire.Errorf(wire.CodeSandboxUnavailable, "no seccomp programs were generated for this architecture")
	}
	if listener, err = load(programs[len(programs)-1], unix.SECCOMP_FILTER_FLAG_NEW_LISTENER); err != nil {
		return nil, -1, err
	}
	sum := sha256.Sum256(slices.Concat(programs...))
	return sum[:], listener, nil
}

// load installs an embedded program on this thread (seccompLoad).
func load(p []byte, flags uintptr) (int, error) {
	fd, err := seccompLoad(decodeBPF(p), flags)
	if err != nil {
		return -1, wire.Errorf(wire.CodeSandboxUnavailable, "load the seccomp filter: %v", err)
	}
	return fd, nil
}

// decodeBPF turns embedded bytes (host byte order) into instructions.
func decodeBPF(p []byte) []unix.SockFilter {
	const insnSize = 8
	if len(p) == 0 || len(p)%insnSize != 0 || len(p)/insnSize > unix.BPF_MAXINSNS {
		panic(fmt.Sprintf("linux: internal error: an embedded seccomp program of %d bytes", len(p)))
	}
	insns := make([]unix.SockFilter, len(p)/insnSize)
	for i := range insns {
		b := p[i*insnSize:]
		insns[i] = unix.SockFilter{Code: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
	}
	return insns
}
