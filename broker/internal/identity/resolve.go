package broker

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"warrant/internal/envpolicy"
	"warrant/internal/fsid"
	"warrant/wire"
)

// maxHops bounds the symlinks followed while resolving one path, as the
// kernel's MAXSYMLINKS does.
const maxHops = 40

// Resolved is an admitted request resolved to its CommandIdentity, with
// the descriptors every fact was measured on. The lifecycle passes those
// descriptors on (the workspace fd to the launcher, the executable to the
// snapshot cache); Close releases whatever it did not take.
type Resolved struct {
	Identity    wire.CommandIdentity
	Fingerprint []byte
	Workspace   *os.File // the workspace root
	Cwd         *os.File // the cwd beneath it
	Exe         *os.File // the executable, open for reading
	Interp      *os.File // the pinned interpreter of a "#!" script, or nil
}

// Close closes every descriptor still held.
func (r *Resolved) Close() {
	for _, f := range []*os.File{r.Workspace, r.Cwd, r.Exe, r.Interp} {
		if f != nil {
			f.Close()
		}
	}
}

// resolve turns an admitted request into its identity. Every fact comes
// from a descriptor opened without following symlinks; paths are only
// used to find what to open.
func (b *Broker) resolve(s *wire.Submit) (_ *Resolved, err error) {
	r := &Resolved{}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	id := &r.Identity
	if r.Workspace, err = openDirNoFollow(s.Workspace); err != nil {
		return nil, wire.Errorf(wire.CodePathInvalid, "cannot open the workspace without following symlinks: %v", err)
	}
	if id.Workspace, err = fsid.Dir(int(r.Workspace.Fd()), s.Workspace); err != nil {
		return nil, wire.Errorf(wire.CodePathInvalid, "cannot identify the workspace: %v", err)
	}
	if r.Cwd, err = openBeneath(r.Workspace, s.Request.Cwd); err != nil {
		return nil, wire.Errorf(wire.CodePathInvalid,
			"the cwd %q cannot be opened beneath the workspace without symlinks or mount crossings: %v", s.Request.Cwd, err)
	}
	if id.Cwd, err = fsid.Dir(int(r.Cwd.Fd()), s.Request.Cwd); err != nil {
		return nil, wire.Errorf(wire.CodePathInvalid, "cannot identify the cwd: %v", err)
	}
	exe, sb, err := identify(s.Request.Executable)
	if err != nil {
		return nil, err
	}
	r.Exe = exe.f
	id.Executable = wire.Executable{Requested: s.Request.Executable, Chain: exe.chain, File: exe.id}
	if sb != nil {
		in, err := identifyInterpreter(sb)
		if err != nil {
			return nil, err
		}
		r.Interp = in.f
		id.Executable.Interpreter = &wire.Interpreter{File: in.id, Arg: in.arg, Chain: in.chain}
	}
	id.Argv = append([]string{}, s.Request.Argv...)
	id.Profile = s.Request.Profile
	id.Env = b.env
	id.Policy = b.policy(id.Executable)
	if id.PolicyDigest, err = digest(&id.Policy); err != nil {
		return nil, err
	}
	if r.Fingerprint, err = Fingerprint(id); err != nil {
		return nil, err
	}
	return r, nil
}

// identified is one program file pinned by descriptor.
type identified struct {
	f     *os.File
	id    wire.FileIdentity
	chain []string
	arg   string // interpreters only
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
		return nil, nil, wire.Errorf(wire.CodeExecutableNotFound, "cannot resolve %s: %v", p, err)
	}
	f, err := openFileNoFollow(canonical)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeExecutableNotFound, "cannot open %s without following symlinks: %v", canonical, err)
	}
	out := &identified{f: f, chain: chain}
	fd := int(f.Fd())
	if out.id, err = fsid.File(fd, canonical); err != nil {
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
			return nil, "", &os.PathError{Op: "resolve", Path: p, Err: errors.New("too many levels of symbolic links")}
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
