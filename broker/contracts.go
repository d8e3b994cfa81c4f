package broker

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"path"
	"strings"
	"time"

	"warrant/broker/internal/contract"
	"warrant/broker/internal/identity"
	"warrant/broker/internal/journal"
	"warrant/broker/internal/protect"
	"warrant/wire"
)

// enableContract grants the library contract m.Name (docs/contracts.md)
// for m.Workspace and m.Profile: its executable (or the one the operator
// named) is resolved as a submit of it with no arguments in the
// workspace's root would be (resolveProgram), and the grant binds that
// identity without argv and cwd (contract.BaseFingerprint). With
// m.Request, the grant is the pending request's instead
// (enableForRequest). The answer shows the file the grant binds.
func (b *Broker) enableContract(ctx context.Context, m *wire.ContractEnable) (*wire.LeaseView, error) {
	c, err := contract.Builtin(m.Name)
	if err != nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "%v", err)
	}
	if m.Request != "" {
		return b.enableForRequest(ctx, c, m)
	}
	exe := m.Executable
	if exe == "" {
		exe = c.Executable()
	}
	r, err := b.resolveProgram(m.Workspace, m.Profile, exe)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	id := r.Identity()
	base, err := contract.BaseFingerprint(id)
	if err != nil {
		return nil, err
	}
	l, _, err := b.j.EnableContract(ctx, c.Name(), c.Digest(), base, id, m.Uses, time.Duration(m.TTLSeconds)*time.Second, "", nil)
	if err == nil {
		l.Program = programFile(&id.Executable)
	}
	return l, err
}

// resolveProgram resolves exe, a contract's executable or the one the
// operator names, as a submit of it with no arguments in the root of the
// workspace ws under profile p would be.
func (b *Broker) resolveProgram(ws string, p wire.Profile, exe string) (*identity.Resolved, error) {
	return b.admit.Resolve(&wire.Submit{Workspace: ws, Request: wire.ActionRequest{Executable: exe, Argv: []string{}, Cwd: ".", Profile: p}})
}

// enableForRequest grants c for pending request m.Request: the grant
// binds the identity the request shows (its workspace, profile and
// resolved executable, without argv and cwd). The request must still be
// pending and able to match here (offerable), run the program c is about
// (programs.check; the file the operator names with m.Executable) and
// c must accept its argv in its cwd, as a submit of it would be matched.
// The journal then settles it as approved, covered by the grant, in the
// same transaction, and with it the oldest other live pending requests
// of the workspace the grant admits (the same base, an argv c accepts in
// its cwd), as many as the grant has uses in all; those matched here,
// before the journal's transaction, which checks each again. What m says
// besides must agree with the request.
func (b *Broker) enableForRequest(ctx context.Context, c *contract.Contract, m *wire.ContractEnable) (*wire.LeaseView, error) {
	v, err := b.offerable(ctx, m.Request)
	if err != nil {
		return nil, err
	}
	id := &v.Identity
	switch {
	case len(id.Egress) > 0:
		return nil, grantsNoEgress(v.ID)
	case m.Workspace != "" && m.Workspace != id.Workspace.Path:
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "request %s is for the workspace %s, not %s; leave the workspace out, or name that one",
			v.ID, id.Workspace.Path, m.Workspace)
	case m.Profile != 0 && m.Profile != id.Profile:
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "request %s runs under the profile %s, not %s; leave the profile out, or name that one",
			v.ID, id.Profile, m.Profile)
	}
	if err := b.programsOf(id).check(c, v.ID, m.Executable); err != nil {
		return nil, err
	}
	ws, err := openRequestWorkspace(v)
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	var me *contract.MatchError
	if err := matchIn(ws, c, id); errors.As(err, &me) {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "%v, so it does not cover request %s; `broker contracts offer %s` lists the contracts that do",
			me, v.ID, v.ID)
	} else if err != nil {
		return nil, err
	}
	base, err := contract.BaseFingerprint(id)
	if err != nil {
		return nil, err
	}
	admits := func(e *wire.CommandIdentity) bool {
		eb, err := contract.BaseFingerprint(e)
		return err == nil && e.Workspace.Same(id.Workspace) && bytes.Equal(eb, base) && matchIn(ws, c, e) == nil
	}
	l, _, err := b.j.EnableContract(ctx, c.Name(), c.Digest(), base, id, m.Uses, time.Duration(m.TTLSeconds)*time.Second, v.ID, admits)
	if err == nil {
		l.Program = programFile(&id.Executable)
	}
	return l, err
}

// programs resolves, at most once each, the executables a contract may
// name in the workspace and profile of one request's identity id.
type programs struct {
	b    *Broker
	id   *wire.CommandIdentity
	seen map[string]resolvedProgram
}

type resolvedProgram struct {
	exe *wire.Executable
	err error
}

func (b *Broker) programsOf(id *wire.CommandIdentity) *programs {
	return &programs{b: b, id: id, seen: map[string]resolvedProgram{}}
}

// resolve is what exe resolves to as the grant's executable would be
// (resolveProgram), or why it does not resolve.
func (p *programs) resolve(exe string) (*wire.Executable, error) {
	got, ok := p.seen[exe]
	if !ok {
		var r *identity.Resolved
		if r, got.err = p.b.resolveProgram(p.id.Workspace.Path, p.id.Profile, exe); got.err == nil {
			e := r.Identity().Executable
			got.exe = &e
			r.Close()
		}
		p.seen[exe] = got
	}
	return got.exe, got.err
}

// check says why a grant of c for request rid (of identity p.id) would
// not bind the program c is about, or nil when it would. A grant lets
// c's arguments run whatever file the request runs, so that file must be
// the one c's executable resolves to in the request's workspace: on the
// sanitized PATH, or, for a request that runs in a toolchain the broker
// recognised, as the program of that name in its root's bin/ (a Go
// root's go) when that root lies outside the places it can write. The comparison is by file identity (path, device, inode,
// SHA-256; a script's with its pinned interpreter), never by the names
// of the links that led to it. A file inside the workspace or another
// place its commands can write (the cache) is bound only when the
// operator names it (named, m.Executable), and a file named must be
// exactly the one the request runs.
func (p *programs) check(c *contract.Contract, rid, named string) error {
	exe := &p.id.Executable
	runs := describe(exe)
	if named != "" {
		e, err := p.resolve(named)
		switch {
		case err != nil:
			return err
		case !sameProgram(e, exe):
			return wire.Errorf(wire.CodeArgumentsInvalid, "--executable %s is %s, which is not the file request %s runs, %s; name that file, or leave the executable out",
				named, describe(e), rid, runs)
		}
		return nil
	}
	if where := p.writableProgram(exe); where != "" {
		return wire.Errorf(wire.CodeArgumentsInvalid,
			"request %s runs %s, a file inside %s, which its commands can write: a contract binds such a file only when you name it (--executable %s)",
			rid, runs, where, exe.File.Path)
	}
	want := []string{c.Executable()}
	if tc := p.id.Toolchain; tc != nil && p.writable(tc.Root) == "" { // a root its commands write could hold any bin/<name>
		want = append(want, path.Join(tc.Root, "bin", path.Base(c.Executable())))
	}
	for _, name := range want {
		if e, err := p.resolve(name); err == nil && sameProgram(e, exe) {
			return nil
		}
	}
	is := "which does not resolve here"
	if e, _ := p.resolve(c.Executable()); e != nil {
		is = "which resolves here to " + describe(e)
	}
	return wire.Errorf(wire.CodeArgumentsInvalid,
		"contract %s is for %s, %s, and request %s runs %s, another file: the contract does not cover it (`broker approve %s` grants exactly its command)",
		c.Name(), c.Executable(), is, rid, runs, rid)
}

// writableProgram names the place a command of p.id can write that
// exe's file or interpreter lies in (writable), or "".
func (p *programs) writableProgram(exe *wire.Executable) string {
	where := p.writable(exe.File.Path)
	if where == "" && exe.Interpreter != nil {
		where = p.writable(exe.Interpreter.File.Path)
	}
	return where
}

// writable names the place a command of p.id can write that the path f
// is or lies in ("the workspace", "the read-write path …"), or "".
func (p *programs) writable(f string) string {
	if beneath(f, p.id.Workspace.Path) {
		return "the workspace"
	}
	for _, rw := range p.id.Policy.ReadWrite {
		if beneath(f, rw) {
			return "the read-write path " + rw
		}
	}
	return ""
}

// beneath reports whether the clean absolute path f is dir or lies
// beneath it.
func beneath(f, dir string) bool {
	return f == dir || strings.HasPrefix(f, strings.TrimSuffix(dir, "/")+"/")
}

// sameProgram reports whether a and b run the same file: the same path,
// device, inode and SHA-256, and for a script the same pinned
// interpreter and argument.
func sameProgram(a, b *wire.Executable) bool {
	if !sameFile(&a.File, &b.File) || (a.Interpreter == nil) != (b.Interpreter == nil) {
		return false
	}
	return a.Interpreter == nil || (sameFile(&a.Interpreter.File, &b.Interpreter.File) && a.Interpreter.Arg == b.Interpreter.Arg)
}

func sameFile(a, b *wire.FileIdentity) bool {
	return a.Path == b.Path && a.Dev == b.Dev && a.Ino == b.Ino && bytes.Equal(a.SHA256, b.SHA256)
}

// describe is exe's file as the operator is told it: its path and the
// start of its SHA-256 ("/usr/bin/git (sha256 0123456789ab…)"); a
// script's interpreter after it.
func describe(exe *wire.Executable) string {
	s := exe.File.Path + " (sha256 " + short(exe.File.SHA256) + ")"
	if in := exe.Interpreter; in != nil {
		s += " run by " + in.File.Path + " (sha256 " + short(in.File.SHA256) + ")"
	}
	return s
}

// short is the first 12 hex digits of a digest, then "…".
func short(d []byte) string {
	h := hex.EncodeToString(d)
	return h[:min(12, len(h))] + "…"
}

// matchContract looks for a live contract grant of the workspace that
// binds r's identity (the same base) and whose contract accepts its argv
// in its cwd, for the action of goal g; the first grant to accept it
// (the one expiring first) gives the Lease Checkpoint consumes a use of.
// nil when none does: the caller asks for an exact approval. A grant
// whose contract this broker no longer ships, or ships with another
// digest, matches nothing; nor does any grant an identity with egress:
// a grant carries none (grantsNoEgress).
func (b *Broker) matchContract(ctx context.Context, g journal.Goal, r *identity.Resolved) (*journal.Lease, error) {
	id := r.Identity()
	if len(id.Egress) > 0 {
		return nil, nil
	}
	grants, err := b.j.LiveContractGrants(ctx, id.Workspace)
	if err != nil || len(grants) == 0 {
		return nil, err
	}
	protected := protectedBeneath(id.Cwd.Path)
	for i := range grants {
		gr := &grants[i]
		c, err := contract.Builtin(gr.Contract)
		if err != nil || c.Digest() != gr.Digest {
			continue
		}
		if ok, err := (&contract.Grant{Base: gr.Base}).Binds(id); err != nil || !ok {
			continue
		}
		p, err := c.Match(id.Argv, r.Cwd(), protected)
		var me *contract.MatchError
		if errors.As(err, &me) {
			continue
		}
		if err != nil {
			return nil, err
		}
		blob, err := wire.Canonical(p)
		if err != nil {
			return nil, err
		}
		return journal.UnderContract(gr, g, r.Fingerprint(), blob), nil
	}
	return nil, nil
}

// protectedNames are the names a contract's path argument may not pass
// through, at any depth: every repository's .git and the first component
// of each of protect.Paths. This is more than protect guards (its list
// is relative to the workspace root; a nested ".envrc" is refused here
// too), and it cannot know a core.hooksPath directory elsewhere: those
// stay the boundary's (protect), as for any command.
var protectedNames = func() map[string]bool {
	m := map[string]bool{".git": true}
	for _, p := range protect.Paths {
		m[strings.SplitN(p, "/", 2)[0]] = true
	}
	return m
}()

// grantsNoEgress refuses to settle request rid, which asks for network
// access, under a contract grant: a grant binds a program for any argv
// its contract accepts and carries no egress, and network access is
// approved for one exact command with its exact list.
func grantsNoEgress(rid string) error {
	return wire.Errorf(wire.CodeArgumentsInvalid, "approval request %s asks for network access (egress), which no contract grant carries; "+
		"approve the command itself with `broker approve %s` (and --egress to grant another list)", rid, rid)
}

// protectedBeneath is the predicate contract.Match asks about a path
// relative to the cwd (cwd, relative to the workspace): true when the
// path, seen from the workspace root, has a protected name as a
// component (the cwd's own included).
func protectedBeneath(cwd string) func(string) bool {
	return func(rel string) bool {
		for _, part := range strings.Split(path.Join(cwd, rel), "/") {
			if protectedNames[part] {
				return true
			}
		}
		return false
	}
}
