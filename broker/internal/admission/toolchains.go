package admission

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"warrant/broker/internal/policy"
	"warrant/broker/internal/statedir"
	"warrant/broker/internal/toolchain"
	"warrant/wire"
)

// ToolchainHost is what toolchain discovery knows of the operator: $HOME
// (as Authority takes it) and the declared variables.
func ToolchainHost(declared []wire.EnvVar) toolchain.Host {
	home, _ := os.UserHomeDir()
	h := toolchain.Host{Home: home, Declared: map[string]string{}}
	for _, kv := range declared {
		h.Declared[kv.Name] = kv.Value
	}
	return h
}

// ToolchainInfo is what an action of one program gets of its toolchain
// (`broker toolchains`): the toolchain, nil when none; the variables it
// sets; whether its root is added to the read paths (false: they cover
// it already); how it was recognised, or why there is none.
type ToolchainInfo struct {
	Program   string
	Toolchain *wire.Toolchain
	Env       []wire.EnvVar
	Added     bool
	Why       string
}

// Toolchains says, for each program (an absolute path, or a name on the
// caller's PATH), or when none for a program of each toolchain at the
// known places (toolchain.Candidates), which toolchain an action of it
// would get from a broker of the state directory d: the same discovery,
// from $HOME and the variables declared in <state>/env (not those of
// `serve --env`, which only the running broker knows), and the same
// checks of its root against the base policy (without `serve
// --read-path`) and the withheld directories. It reads the state
// directory and writes nothing.
func Toolchains(d statedir.Dirs, programs []string) ([]ToolchainInfo, error) {
	declared, err := DeclaredEnv(d.Env, nil)
	if err != nil {
		return nil, err
	}
	h := ToolchainHost(declared)
	base, err := policy.Base(nil)
	if err != nil {
		return nil, err
	}
	state := d.Root
	if _, err := os.Stat(state); errors.Is(err, fs.ErrNotExist) {
		// No broker made it yet: a stand-in, so that only the home
		// directory and the filesystem root are withheld.
		if state, err = os.MkdirTemp("", "warrant-toolchains-"); err != nil {
			return nil, err
		}
		defer os.Remove(state)
	}
	w, err := policy.Withhold(h.Home, state)
	if err != nil {
		return nil, err
	}
	if len(programs) == 0 {
		programs = toolchain.Candidates(h)
	}
	out := make([]ToolchainInfo, 0, len(programs))
	for _, p := range programs {
		out = append(out, toolchainOf(h, base, w, p))
	}
	return out, nil
}

// toolchainOf is Toolchains for one program.
func toolchainOf(h toolchain.Host, base wire.Policy, w *policy.Withheld, p string) ToolchainInfo {
	info := ToolchainInfo{Program: p}
	if !filepath.IsAbs(p) {
		found, err := exec.LookPath(p)
		if err != nil {
			info.Why = fmt.Sprintf("%s is not on your PATH", p)
			return info
		}
		if info.Program, err = filepath.Abs(found); err != nil {
			info.Why = err.Error()
			return info
		}
	}
	paths, err := toolchain.Reach(filepath.Clean(info.Program))
	if err != nil {
		info.Why = fmt.Sprintf("%s cannot be reached: %v", info.Program, err)
		return info
	}
	f, why := toolchain.Find(h, paths)
	if f == nil {
		info.Why = why
		return info
	}
	pol, err := policy.WithToolchain(base, w, "", f.Toolchain.Root)
	if err != nil {
		info.Why = fmt.Sprintf("%s; but it is left out: %v", f.Why, err)
		return info
	}
	tc := f.Toolchain
	info.Toolchain, info.Env, info.Why = &tc, f.Env, f.Why
	info.Added = slices.Contains(pol.ReadExec, tc.Root) && !slices.Contains(base.ReadExec, tc.Root)
	return info
}
