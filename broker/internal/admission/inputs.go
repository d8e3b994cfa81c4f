package admission

import (
	"slices"
	"strings"

	"warrant/broker/internal/policy"
	"warrant/broker/internal/toolchain"
	"warrant/internal/envpolicy"
	"warrant/wire"
)

// Inputs decides an action's environment and policy once its workspace
// and executable are known (identity.Inputs): the executable's default
// policy (policy.For), then the workspace's cache — created if need be,
// its use recorded — as a read-write path, with its variables added to
// the allowlisted and declared environment. Both are in the identity, so
// the fingerprint covers the cache's path and pin.
func (r *Resolver) Inputs(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, error) {
	pol, err := policy.For(r.Base, r.Withheld, ws.Path, exe)
	if err != nil {
		return nil, wire.Policy{}, err
	}
	c, err := r.Caches.For(ws)
	if err != nil {
		return nil, wire.Policy{}, wire.Errorf(wire.CodeIOFailed, "%v", err)
	}
	if pol, err = policy.WithReadWrite(pol, c.Dir); err != nil {
		return nil, wire.Policy{}, err
	}
	env := append(slices.Clone(r.Env), c.Env...)
	slices.SortFunc(env, func(x, y wire.EnvVar) int { return strings.Compare(x.Name, y.Name) })
	return env, pol, nil
}

// decide is Inputs, then the toolchain the executable (else its
// interpreter) lies in, when broker/internal/toolchain recognises one:
// its root granted read+exec (policy.WithToolchain) and its variables
// added to the environment, a variable the operator declared or the
// cache sets keeping its value. The toolchain goes into the identity
// (Resolve), beside the grant and the variables, so the fingerprint
// covers all three. A toolchain the policy refuses (a withheld root) is
// left out, logged: the program runs as it would without it.
func (r *Resolver) decide(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, *wire.Toolchain, error) {
	env, pol, err := r.Inputs(ws, exe)
	if err != nil {
		return nil, wire.Policy{}, nil, err
	}
	h := r.Toolchains
	f, _ := toolchain.Find(h, toolchain.Program(&exe))
	if p := toolchain.Interpreter(&exe); f == nil && p != nil {
		f, _ = toolchain.Find(h, p)
	}
	if f == nil {
		return env, pol, nil, nil
	}
	tc := f.Toolchain
	granted, err := policy.WithToolchain(pol, r.Withheld, ws.Path, tc.Root)
	if err != nil {
		r.Logf("the %s toolchain %s at %s is left out of the action of %s: %v", tc.Kind, tc.Name, tc.Root, exe.File.Path, err)
		return env, pol, nil, nil
	}
	out, vars := slices.Clone(env), []string(nil)
	for _, kv := range f.Env {
		if !slices.ContainsFunc(out, func(e wire.EnvVar) bool { return e.Name == kv.Name }) {
			out, vars = append(out, kv), append(vars, kv.Name)
		}
	}
	if len(out) > wire.MaxEnvVars {
		r.Logf("the %s toolchain %s at %s is left out of the action of %s: its variables make more than %d", tc.Kind, tc.Name, tc.Root, exe.File.Path, wire.MaxEnvVars)
		return env, pol, nil, nil
	}
	slices.SortFunc(out, func(x, y wire.EnvVar) int { return strings.Compare(x.Name, y.Name) })
	tc.Vars = vars
	return out, granted, &tc, nil
}

// ActionEnv is the identity's environment but for the workspace cache's
// variables: the allowlist built from the broker's environment and the
// operator's declared variables, without HOME and TMPDIR, which are per
// action.
func ActionEnv(environ []string, declared []wire.EnvVar) []wire.EnvVar {
	var env []wire.EnvVar
	for _, kv := range envpolicy.Build(environ, declared, "/", "/") {
		if kv.Name != "HOME" && kv.Name != "TMPDIR" {
			env = append(env, kv)
		}
	}
	return env
}
