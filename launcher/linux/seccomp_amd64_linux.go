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

// programs are the seccomp programs in load order: the argument program
// (for both: step 1 loads it before the request says which), then the main
// one, or with hints the one that notifies write-intent opens too.
func programs(hints bool) [][]byte {
	if hints {
		return [][]byte{argsProgram, hintsProgram}
	}
	return [][]byte{argsProgram, mainProgram}
}
