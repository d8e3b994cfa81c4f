package cli

import (
	"os"
	"path/filepath"
	"syscall"

	"warrant/wire"
)

// handOff replaces this process with brokerd, beside this binary, on the
// same command line: what the thin client cannot do itself (a command
// that needs the broker, reads the state directory or links receipt,
// contract or goal code, `run` when no daemon answers) brokerd does,
// with its exit status, signals and terminal. Only the binary beside
// this one is run, never one found on $PATH; none there is
// SANDBOX_UNAVAILABLE. It returns only on failure.
func (e *Env) handOff() error {
	self, err := os.Executable()
	if err != nil {
		return wire.Explain(wire.CodeSandboxUnavailable, err, "`broker %s` needs brokerd, and this binary cannot find its own path to look beside it", e.name)
	}
	path := filepath.Join(filepath.Dir(self), "brokerd")
	err = syscall.Exec(path, append([]string{path}, e.args...), os.Environ())
	return wire.Explain(wire.CodeSandboxUnavailable, err, "`broker %s` needs brokerd, and there is none to run at %s: "+
		"build both with `make build`, or install brokerd beside broker", e.name, path)
}
