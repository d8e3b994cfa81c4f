package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"warrant/broker/internal/identity"
	"warrant/wire"
)

// resolve is identity.Resolve of s with what the broker adds once the
// executable is known: the sealed snapshot where <state>/bindings lists
// it (bindings.go), the operator's git identity (gitidentity.go) and the
// toolchain the executable lies in (toolchains.go). The fingerprint
// covers them. A bare name the sanitized PATH does not have
// is refused with where the broker's own PATH has it (notOnPath).
func (b *Broker) resolve(s *wire.Submit) (*identity.Resolved, error) {
	var tc *wire.Toolchain
	r, err := identity.Resolve(s, b.protected, func(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, error) {
		env, pol, t, err := b.decide(ws, exe) // toolchains.go
		tc = t
		return env, pol, err
	})
	if err != nil {
		return nil, b.notOnPath(err, &s.Request)
	}
	if err := r.Amend(func(id *wire.CommandIdentity) {
		if sealedByDefault(b.sealed, &id.Executable) {
			id.Binding = wire.SealedSnapshot
		}
		id.GitIdentity = b.git
		id.Toolchain = tc
	}); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// notOnPath adds to the refusal err of req, when req names a bare
// executable that was not found, where the PATH the broker was started
// with (the user's, for an embedded broker) has it, and the command that
// runs it by that path: the target's PATH is the sanitized one, so a
// toolchain in /usr/local/go/bin or ~/.cargo/bin is found only by its
// absolute path.
func (b *Broker) notOnPath(err error, req *wire.ActionRequest) error {
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeExecutableNotFound || strings.Contains(req.Executable, "/") {
		return err
	}
	out := *we
	if p := b.onHostPath(req.Executable); p != "" {
		args := ""
		if len(req.Argv) > 0 {
			args = " …" // the same arguments; not repeated unquoted
		}
		out.Message += "; " + plain(req.Executable) + " is " + plain(p) + " on your PATH; run it by that path: broker run -- " + plain(p) + args
	} else {
		out.Message += ", and not on your PATH either"
	}
	return &out
}

// onHostPath is the first regular, executable dir/name for an absolute
// dir of the PATH in the broker's environment, or "".
func (b *Broker) onHostPath(name string) string {
	path := ""
	for _, kv := range b.cfg.Environ {
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

// plain is s as it is when every byte of it prints as itself, else
// quoted: a file name may hold anything but '/' and NUL.
func plain(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}
