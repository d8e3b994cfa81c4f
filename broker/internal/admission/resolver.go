package admission

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"warrant/broker/internal/caches"
	"warrant/broker/internal/egress"
	"warrant/broker/internal/identity"
	"warrant/broker/internal/policy"
	"warrant/broker/internal/toolchain"
	"warrant/broker/view"
	"warrant/wire"
)

// A Resolver is what the broker brings to a request's resolution, all
// decided at its Open and never changed after: its authority, its base
// policy and environment, the workspace caches, and what the operator
// configured.
type Resolver struct {
	// Protected are the places no workspace may overlap, and Withheld the
	// directories no program's own directory is granted as (Authority).
	Protected *identity.Protected
	Withheld  *policy.Withheld
	Base      wire.Policy   // the default policy (policy.Base)
	Env       []wire.EnvVar // the identity's environment but for the workspace cache's variables (ActionEnv)
	Declared  []wire.EnvVar // the operator's declared variables (DeclaredEnv)
	Environ   []string      // the broker's own environment
	Caches    *caches.Store
	// Toolchains is where toolchains are looked for: home and declared
	// variables, as at Open (ToolchainHost).
	Toolchains toolchain.Host
	// Sealed are the executables <state>/bindings defaults to the sealed
	// snapshot (ReadBindings); Git is the operator's git identity, which
	// every action's HOME carries (GitIdentity), or nil.
	Sealed map[string]bool
	Git    *wire.GitIdentity
	// Presets are the operator's named egress lists (<state>/egress,
	// egress.ReadPresets): a request may ask for one by name.
	Presets map[string][]string
	Logf    func(string, ...any)
}

// Resolve is identity.Resolve of s with what the broker adds once the
// executable is known: the sealed snapshot where <state>/bindings lists
// it (bindings.go), the operator's git identity (gitidentity.go), the
// toolchain the executable lies in (inputs.go) and the exact egress list
// the request asked for, its presets expanded (egress.Expand; an ask
// that names no preset, or too many entries, is ARGUMENTS_INVALID
// before anything is measured). The fingerprint covers them. A bare
// name the sanitized PATH does not have is refused with where the
// broker's own PATH has it (notOnPath).
func (r *Resolver) Resolve(s *wire.Submit) (*identity.Resolved, error) {
	granted, err := egress.Expand(s.Request.Egress, r.Presets)
	if err != nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "the network access asked for (--egress) cannot be approved as asked: %v", err)
	}
	var tc *wire.Toolchain
	res, err := identity.Resolve(s, r.Protected, func(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, error) {
		env, pol, t, err := r.decide(ws, exe) // inputs.go
		tc = t
		return env, pol, err
	}, func(id *wire.CommandIdentity) {
		if sealedByDefault(r.Sealed, &id.Executable) {
			id.Binding = wire.SealedSnapshot
		}
		id.GitIdentity = r.Git
		id.Toolchain = tc
		id.Egress = granted
	})
	if err != nil {
		return nil, r.notOnPath(err, &s.Request)
	}
	return res, nil
}

// ResolveProbe resolves the capability probe's program s as an ordinary
// action would be, with the default policy and an environment built from
// the broker's plus extraEnv (and the declared variables). It gets no
// workspace cache: its scratch workspace is new at every probe. Its
// workspace is the scratch directory the probe makes under the state
// directory root: inside the state directory by design, so that one
// place — the state directory's root — is left out of its workspace
// check (identity.Protected.Without); every other place, keys/, run/ and
// actions/ among them, is checked as for any action. amend, if set, adds
// what the probe pins (identity.Resolve's amend: one fingerprint).
func (r *Resolver) ResolveProbe(s *wire.Submit, extraEnv []string, root string, amend func(*wire.CommandIdentity)) (*identity.Resolved, error) {
	env := ActionEnv(append(append([]string{}, r.Environ...), extraEnv...), r.Declared)
	return identity.Resolve(s, r.Protected.Without(root), func(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, error) {
		pol, err := policy.For(r.Base, r.Withheld, ws.Path, exe)
		return env, pol, err
	}, amend)
}

// notOnPath adds to the refusal err of req, when req names a bare
// executable that was not found, where the PATH the broker was started
// with (the user's, for an embedded broker) has it, and the command that
// runs it by that path: the target's PATH is the sanitized one, so a
// toolchain in /usr/local/go/bin or ~/.cargo/bin is found only by its
// absolute path.
func (r *Resolver) notOnPath(err error, req *wire.ActionRequest) error {
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeExecutableNotFound || strings.Contains(req.Executable, "/") {
		return err
	}
	out := *we
	if p := r.onHostPath(req.Executable); p != "" {
		args := ""
		if len(req.Argv) > 0 {
			args = " …" // the same arguments; not repeated unquoted
		}
		out.Message += "; " + view.Plain(req.Executable) + " is " + view.Plain(p) + " on your PATH; run it by that path: broker run -- " + view.Plain(p) + args
	} else {
		out.Message += ", and not on your PATH either"
	}
	return &out
}

// onHostPath is the first regular, executable dir/name for an absolute
// dir of the PATH in the broker's environment, or "".
func (r *Resolver) onHostPath(name string) string {
	path := ""
	for _, kv := range r.Environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v // the first, as getenv finds it
			break
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
