package linux

import _ "embed"

var (
	//go:embed seccomp_args_amd64.bpf
	argsProgram []byte
	//go:embed seccomp_main_amd64.bpf
	mainProgram []byte
)

// programs are the seccomp programs in load order.
var programs = [][]byte{argsProgram, mainProgram}
