package linux

import _ "embed"

var (
	//go:embed seccomp_args_amd64.bpf
	argsProgram []byte
	//go:embed seccomp_main_amd64.bpf
	mainProgram []byte
	//go:embed seccomp_hints_amd64.bpf
	hintsProgram []byte
)

// programs are the seccomp programs in load order: the argument program,
// then the main one, or with hints the main one that notifies
// write-intent opens too (seccompgen's mainFilter).
func programs(hints bool) [][]byte {
	if hints {
		return [][]byte{argsProgram, hintsProgram}
	}
	return [][]byte{argsProgram, mainProgram}
}
