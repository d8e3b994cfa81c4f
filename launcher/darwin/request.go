package darwin

import (
	"warrant/internal/envpolicy"
	"warrant/wire"
)

// plan is everything the launcher will do, derived from a request by pure
// code before any descriptor is touched.
type plan struct {
	path    string   // handed to execve: the executable, or a script's pinned interpreter
	argv    []string // what the target sees
	env     []string // NAME=VALUE, exactly the request's allowlisted entries
	profile string   // the Seatbelt profile
}

// admit checks what can be checked without the kernel and returns the
// plan. nfds is the number of descriptors that came with the request. Every
// refusal carries a stable code; nothing in req is trusted because the
// broker is supposed to have checked it.
func admit(req *wire.SpawnRequest, nfds int) (*plan, *wire.Error) {
	if req.Snapshots {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid,
			"snapshots were requested, but macOS cannot execute from a descriptor; the darwin launcher takes none")
	}
	if nfds != req.FDCount() {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid,
			"request came with %d descriptors, want %d (workspace, stdout, stderr)", nfds, req.FDCount())
	}
	if e := checkCwd(req.Cwd.Path); e != nil {
		return nil, e
	}
	if req.Cwd.Dev != req.Workspace.Dev {
		return nil, wire.Errorf(wire.CodePathInvalid,
			"cwd %q is on another file system than the workspace", req.Cwd.Path)
	}
	if err := envpolicy.Check(req.Env, req.Home, req.Tmp, req.EgressPort); err != nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "check environment: %v", err)
	}
	p := &plan{path: req.Executable.Path, argv: req.Argv}
	spec := Spec{Policy: req.Policy, Workspace: req.Workspace.Path, Home: req.Home, Tmp: req.Tmp, Exec: p.path}
	if in := req.Interpreter; in != nil {
		// What the kernel would have built from the "#!" line, but with
		// the pinned interpreter: interpreter [arg] script argv[1:]...
		p.path = in.File.Path
		p.argv = []string{in.File.Path}
		if in.Arg != "" {
			p.argv = append(p.argv, in.Arg)
		}
		p.argv = append(append(p.argv, req.Executable.Path), req.Argv[1:]...)
		spec.Exec, spec.Script = in.File.Path, req.Executable.Path
	}
	for _, kv := range req.Env {
		p.env = append(p.env, kv.Name+"="+kv.Value)
	}
	profile, e := Profile(spec)
	if e != nil {
		return nil, e
	}
	p.profile = profile
	return p, nil
}
