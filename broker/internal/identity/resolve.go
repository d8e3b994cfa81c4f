package identity

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"warrant/internal/envpolicy"
	"warrant/internal/fsid"
	"warrant/wire"
)

// maxHops bounds the symlinks followed while resolving one path, as the
// kernel's MAXSYMLINKS does.
const maxHops = 40

// Resolved is an admitted request resolved to its CommandIdentity, with
// the descriptors every fact was measured on. Only Resolve makes one, so
// a Resolved always holds an identity whose fingerprint covers all of it.
// The executor passes the descriptors on (the workspace fd to the
// launcher, the executable to the snapshot cache); Close releases them.
type Resolved struct {
	id          wire.CommandIdentity
	fingerprint []byte
	workspace   *os.File // the workspace root
	cwd         *os.File // the cwd beneath it
	exe         *os.File // the executable, open for reading
	interp      *os.File // the pinned interpreter of a "#!" script, or nil
}

// Identity is the resolved identity. It is shared: callers must not
// modify it.
func (r *Resolved) Identity() *wire.CommandIdentity { return &r.id }

// Fingerprint is the SHA-256 of the canonical encoding of Identity.
func (r *Resolved) Fingerprint() []byte { return r.fingerprint }

// Workspace is the workspace root, opened O_PATH without following
// symlinks.
func (r *Resolved) Workspace() *os.File { return r.workspace }

// Cwd is the action's cwd, opened beneath the workspace.
func (r *Resolved) Cwd() *os.File { return r.cwd }

// Exe is the executable, open for reading.
func (r *Resolved) Exe() *os.File { return r.exe }

// Interp is the pinned interpreter of a "#!" script, open for reading,
// or nil.
func (r *Resolved) Interp() *os.File { return r.interp }

// Close closes every descriptor.
func (r *Resolved) Close() {
	for _, f := range []*os.File{r.workspace, r.cwd, r.exe, r.interp} {
		if f != nil {
			f.Close()
		}
	}
}

// Inputs decides what the broker puts into an identity once its
// workspace and executable are known: the target's environment (the
// allowlist, the operator's declared variables, the workspace cache's)
// and the sandbox policy (broker/internal/policy's decision for the
// executable, plus the workspace cache), or a refusal (*wire.Error).
type Inputs func(ws wire.DirIdentity, exe wire.Executable) (env []wire.EnvVar, pol wire.Policy, err error)

// Resolve turns an admitted request into its identity, with the
// environment and policy inputs decides for its workspace and
// executable, then amend's additions (nil: none) before its one
// fingerprint. A workspace that overlaps a protected place is refused
// (PATH_INVALID) before anything else is measured. A workspace
// executable (wire.WorkspaceExecutable) is resolved beneath the workspace
// root by descriptor (workspace.go), anything else on the sanitized PATH
// or by absolute path. Every fact comes from a descriptor opened without
// following symlinks; paths are only used to find what to open.
func Resolve(s *wire.Submit, protected *Protected, inputs Inputs, amend func(*wire.CommandIdentity)) (_ *Resolved, err error) {
	if protected == nil {
		panic("identity: internal error: Resolve without the protected places")
	}
	r := &Resolved{}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	id := &r.id
	if r.workspace, err = openDirNoFollow(s.Workspace); err != nil {
		return nil, wire.Explain(wire.CodePathInvalid, err, "the workspace %s %s; pass --workspace an existing directory", s.Workspace, pathProblem(err))
	}
	if id.Workspace, err = fsid.Dir(int(r.workspace.Fd()), s.Workspace); err != nil {
		return nil, wire.Errorf(wire.CodePathInvalid, "cannot identify the workspace: %v", err)
	}
	if err := protected.check(r.workspace, s.Workspace); err != nil {
		return nil, err
	}
	if r.cwd, err = openBeneath(r.workspace, s.Request.Cwd); err != nil {
		return nil, wire.Explain(wire.CodePathInvalid, err,
			"the cwd %q in the workspace %s %s; %s", s.Request.Cwd, s.Workspace, pathProblem(err), cwdFix(err))
	}
	if id.Cwd, err = fsid.Dir(int(r.cwd.Fd()), s.Request.Cwd); err != nil {
		return nil, wire.Errorf(wire.CodePathInvalid, "cannot identify the cwd: %v", err)
	}
	var exe *identified
	var sb *Shebang
	if wire.WorkspaceExecutable(s.Request.Executable) {
		exe, sb, err = identifyInWorkspace(r.workspace, s.Workspace, s.Request.Executable)
	} else {
		exe, sb, err = identify(s.Request.Executable)
	}
	if err != nil {
		return nil, err
	}
	r.exe = exe.f
	id.Executable = wire.Executable{Requested: s.Request.Executable, Chain: exe.chain, File: exe.id}
	if sb != nil {
		in, err := identifyInterpreter(sb)
		if err != nil {
			return nil, err
		}
		r.interp = in.f
		id.Executable.Interpreter = &wire.Interpreter{File: in.id, Arg: in.arg, Chain: in.chain}
		releaseLease(int(r.exe.Fd())) // writers of a script need not wait for the broker
	}
	id.Argv = append([]string{}, s.Request.Argv...)
	id.Profile = s.Request.Profile
	// Every program runs in place unless the operator says otherwise: any
	// program may run itself again by its own path (/proc/self/exe, node's
	// process.execPath), which a sealed copy names /memfd:… (deleted).
	id.Binding = wire.InPlace
	if id.Env, id.Policy, err = inputs(id.Workspace, id.Executable); err != nil {
		return nil, err
	}
	if id.PolicyDigest, err = Digest(&id.Policy); err != nil {
		return nil, err
	}
	if amend != nil {
		amend(id)
	}
	if r.fingerprint, err = Fingerprint(id); err != nil {
		return nil, err
	}
	return r, nil
}

// Rebind returns r's identity under binding b, with its fingerprint, for
// the operator who pins a binding other than the default (`broker approve
// --binding`). The descriptors stay r's: the copy must not be closed.
func (r *Resolved) Rebind(b wire.Binding) (*wire.CommandIdentity, []byte, error) {
	id := r.id
	id.Binding = b
	fp, err := Fingerprint(&id)
	return &id, fp, err
}

// WithIdentity returns r bound as id says (an identity Rebind made from
// r, whose lease matched); r's descriptors move to the result.
func (r *Resolved) WithIdentity(id *wire.CommandIdentity, fp []byte) *Resolved {
	out := *r
	out.id, out.fingerprint = *id, fp
	*r = Resolved{}
	return &out
}

// ProgramDigest is the SHA-256 of the program file at the absolute path
// p, measured as an executable is: opened without following symlinks,
// bounded, stable while it was read.
func ProgramDigest(p string) ([]byte, error) {
	exe, _, err := identify(p)
	if err != nil {
		return nil, err
	}
	exe.f.Close()
	return exe.id.SHA256, nil
}

// identified is one program file pinned by descriptor.
type identified struct {
	f     *os.File
	id    wire.FileIdentity
	chain []string
	arg   string // interpreters only
}

// Leased reports whether the broker still holds, on the descriptors it
// hashed, a read lease on the executable and its interpreter: taken
// before hashing, it could only be had while no one had the file open for
// writing (a writable mapping included), and no one could open it for
// writing since without breaking it. Held until the exec, it binds the
// bytes the kernel runs in place to the approved digest.
func (r *Resolved) Leased() bool {
	f := r.exe
	if r.interp != nil {
		f = r.interp // a script is read by its interpreter by path: only the interpreter is bound
	}
	return f != nil && leaseHeld(int(f.Fd()))
}

// Unwritable reports whether this broker's uid cannot write f, as
// measured: another owner's file that neither group nor others may
// write (root may write anything).
func Unwritable(f *wire.FileIdentity) bool {
	uid := uint32(os.Geteuid())
	return uid != 0 && f.UID != uid && f.Mode&0o022 == 0
}

// identify finds requested (a name on the sanitized PATH or an absolute
// path), follows and records its symlinks, opens the final path without
// following any, and measures it. It also returns the file's "#!" line, if
// it has one.
func identify(requested string) (*identified, *Shebang, error) {
	p, err := lookPath(requested)
	if err != nil {
		return nil, nil, err
	}
	chain, canonical, err := resolveChain(p)
	if err != nil {
		return nil, nil, wire.Explain(wire.CodeExecutableNotFound, err, "%s %s", p, chainProblem(err))
	}
	f, err := openFileNoFollow(canonical)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeExecutableNotFound, "cannot open %s without following symlinks: %v", canonical, err)
	}
	return measure(f, canonical, chain)
}

// measure identifies the program file f, opened without following
// symlinks at its canonical path reached through chain: its fstat
// identity and bounded digest (remembered for files only root can change:
// digests), stable while it was read, and its "#!" line, if it has one.
// It closes f on error.
func measure(f *os.File, canonical string, chain []string) (*identified, *Shebang, error) {
	var err error
	out := &identified{f: f, chain: chain}
	fd := int(f.Fd())
	takeReadLease(fd) // before hashing: see Leased
	if out.id, err = fsid.Stat(fd, canonical); err == nil {
		err = digests.digest(fd, &out.id, os.Geteuid(), fsid.Digest)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, fsid.ErrTooLarge) {
			return nil, nil, wire.Errorf(wire.CodeArgumentsInvalid, "%s is larger than 512 MiB; warrant does not hash or run files that large", canonical)
		}
		return nil, nil, wire.Errorf(wire.CodeExecutableNotFound, "cannot identify %s: %v", canonical, err)
	}
	if out.id.Mode&0o111 == 0 {
		f.Close()
		return nil, nil, wire.Errorf(wire.CodeExecutableNotFound, "%s is not executable", canonical)
	}
	head := make([]byte, MaxShebang)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		f.Close()
		return nil, nil, wire.Errorf(wire.CodeIOFailed, "cannot read %s: %v", canonical, err)
	}
	again, err := fsid.Stat(fd, canonical)
	if err != nil || !fsid.SameFile(out.id, again) {
		f.Close()
		return nil, nil, wire.Errorf(wire.CodeIdentityDrift, "%s changed while it was being identified", canonical)
	}
	sb, err := ParseShebang(head[:n])
	if err != nil {
		f.Close()
		return nil, nil, wire.Errorf(wire.CodeArgumentsInvalid, "%s: %v", canonical, err)
	}
	return out, sb, nil
}

// identifyInterpreter pins the interpreter of a "#!" line. For
// "#!/usr/bin/env NAME" the interpreter pinned is NAME resolved on the
// sanitized PATH (env itself is not run, so no PATH search happens at
// exec time). An interpreter that is itself a script is refused.
func identifyInterpreter(sb *Shebang) (*identified, error) {
	want, arg := sb.Interpreter, sb.Arg
	if path.Base(sb.Interpreter) == "env" {
		if arg == "" || strings.ContainsAny(arg, " \t/=") || strings.HasPrefix(arg, "-") {
			return nil, wire.Errorf(wire.CodeArgumentsInvalid,
				"#!%s %s: only \"#!/usr/bin/env NAME\" with a bare program name is supported", sb.Interpreter, arg)
		}
		want, arg = arg, ""
	}
	in, nested, err := identify(want)
	if err != nil {
		return nil, err
	}
	if nested != nil {
		in.f.Close()
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "the interpreter %s is itself a #! script; warrant pins one interpreter, not a chain", in.id.Path)
	}
	in.arg = arg
	return in, nil
}

// lookPath returns requested if it is absolute, else the first regular,
// executable dir/requested for dir on the sanitized PATH.
func lookPath(requested string) (string, error) {
	if path.IsAbs(requested) {
		return requested, nil
	}
	for dir := range strings.SplitSeq(envpolicy.SanitizedPath, ":") {
		p := dir + "/" + requested
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", wire.Errorf(wire.CodeExecutableNotFound, "%q is not an executable on the sanitized PATH %s", requested, envpolicy.SanitizedPath)
}

// resolveChain resolves every symlink in the absolute path p, component by
// component as the kernel does, and returns the path of each symlink it
// followed, in order, and the final symlink-free path.
func resolveChain(p string) (chain []string, canonical string, err error) {
	var done []string    // resolved components, none a symlink
	todo := splitPath(p) // components still to resolve
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := "/" + strings.Join(append(done[:len(done):len(done)], c), "/")
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil, "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if hops++; hops > maxHops {
			return nil, "", &os.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(cur)
		if err != nil {
			return nil, "", err
		}
		chain = append(chain, cur)
		if path.IsAbs(target) {
			done = nil
		}
		todo = append(splitPath(target), todo...)
	}
	return chain, "/" + strings.Join(done, "/"), nil
}

func splitPath(p string) []string {
	var out []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
