package main

import (
	"encoding/binary"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// disassemble writes one line per classic BPF instruction: the forms
// libseccomp emits get a mnemonic, anything else its raw fields.
func disassemble(w io.Writer, prog []byte) {
	for i := 0; i+8 <= len(prog); i += 8 {
		code := binary.NativeEndian.Uint16(prog[i:])
		jt, jf, k := prog[i+2], prog[i+3], binary.NativeEndian.Uint32(prog[i+4:])
		pc := i / 8
		var s string
		switch {
		case code == unix.BPF_LD|unix.BPF_W|unix.BPF_ABS:
			s = fmt.Sprintf("ld  [%d]", k)
		case code == unix.BPF_RET|unix.BPF_K:
			s = fmt.Sprintf("ret %#08x%s", k, action(k))
		case code == unix.BPF_ALU|unix.BPF_AND|unix.BPF_K:
			s = fmt.Sprintf("and #%#x", k)
		case code&0x07 == unix.BPF_JMP && code&0xf0 != unix.BPF_JA && code&0x08 == unix.BPF_K:
			op := map[uint16]string{unix.BPF_JEQ: "jeq", unix.BPF_JGT: "jgt", unix.BPF_JGE: "jge", unix.BPF_JSET: "jset"}[code&0xf0]
			s = fmt.Sprintf("%-4s #%#x, %d, %d", op, k, pc+1+int(jt), pc+1+int(jf))
		case code == unix.BPF_JMP|unix.BPF_JA:
			s = fmt.Sprintf("ja  %d", pc+1+int(k))
		default:
			s = fmt.Sprintf("code=%#04x jt=%d jf=%d k=%#x", code, jt, jf, k)
		}
		fmt.Fprintf(w, "%4d: %s\n", pc, s)
	}
}

// action names a seccomp return value.
func action(k uint32) string {
	switch k & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return " allow"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return " kill_process"
	case unix.SECCOMP_RET_ERRNO:
		return fmt.Sprintf(" errno %s", unix.ErrnoName(unix.Errno(k&unix.SECCOMP_RET_DATA)))
	}
	return ""
}
