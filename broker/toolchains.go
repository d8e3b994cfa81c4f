package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"warrant/broker/internal/policy"
	"warrant/broker/internal/toolchain"
	"warrant/wire"
)

// decide is inputs, then the toolchain the executable (else its
// interpreter) lies in, when broker/internal/toolchain recognises one:
// its root granted read+exec (policy.WithToolchain) and its variables
// added to the environment, a variable the operator declared or the
// cache sets keeping its value. The toolchain goes into the identity
// (resolve), beside the grant and the variables, so the fingerprint
// covers all three. A toolchain the policy refuses (a withheld root) is
// left out, logged: the program runs as it would without it.
func (b *Broker) decide(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, *wire.Toolchain, error) {
	env, pol, err := b.inputs(ws, exe)
	if err != nil {
		return nil, wire.Policy{}, nil, err
	}
	h := b.toolchains
	f, _ := toolchain.Find(h, toolchain.Program(&exe))
	if p := toolchain.Interpreter(&exe); f == nil && p != nil {
		f, _ = toolchain.Find(h, p)
	}
	if f == nil {
		return env, pol, nil, nil
	}
	tc := f.Toolchain
	granted, err := policy.WithToolchain(pol, b.withheld, ws.Path, tc.Root)
	if err != nil {
		b.cfg.Logf("the %s toolchain %s at %s is left out of the action of %s: %v", tc.Kind, tc.Name, tc.Root, exe.File.Path, err)
		return env, pol, nil, nil
	}
	out, vars := slices.Clone(env), []string(nil)
	for _, kv := range f.Env {
		if !slices.ContainsFunc(out, func(e wire.EnvVar) bool { return e.Name == kv.Name }) {
			out, vars = append(out, kv), append(vars, kv.Name)
		}
	}
	if len(out) > wire.MaxEnvVars {
		b.cfg.Logf("the %s toolchain %s at %s is left out of the action of %s: its variables make more than %d", tc.Kind, tc.Name, tc.Root, exe.File.Path, wire.MaxEnvVars)
		return env, pol, nil, nil
	}
	slices.SortFunc(out, func(x, y wire.EnvVar) int { return strings.Compare(x.Name, y.Name) })
	tc.Vars = vars
	return out, granted, &tc, nil
}

// toolchainHost is what toolchain discovery knows of the operator: $HOME
// (as authority takes it) and the declared variables.
func toolchainHost(declared []wire.EnvVar) toolchain.Host {
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
// would get from a broker of stateDir: the same discovery, from $HOME
// and the variables declared in <state>/env (not those of `serve --env`,
// which only the running broker knows), and the same checks of its root
// against the base policy (without `serve --read-path`) and the withheld
// directories. It reads the state directory and writes nothing.
func Toolchains(stateDir string, programs []string) ([]ToolchainInfo, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("list toolchains: %w", err)
	}
	d := layout(abs)
	declared, err := declaredEnv(d.env, nil)
	if err != nil {
		return nil, err
	}
	h := toolchainHost(declared)
	base, err := policy.Base(nil)
	if err != nil {
		return nil, err
	}
	state := d.root
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
