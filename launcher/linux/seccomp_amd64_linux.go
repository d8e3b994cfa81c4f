package linux

import _ "embed"

var (
	//go:embed seccomp_ioctl_amd64.bpf
	ioctlProgram []byte
	//go:embed seccomp_main_amd64.bpf
	mainProgram []byte
)

// programs are the seccomp programs in load order.
var programs = [][]byte{ioctlProgram, mainProgram}
