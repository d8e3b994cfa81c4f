package identity

import (
	"errors"
	"os"
	"path"
	"strings"
	"syscall"

	"warrant/wire"
)

// modeSymlink is S_IFLNK, as lstatBeneath reports it.
const modeSymlink = 0o120000

// identifyInWorkspace is identify for a workspace executable (Admit has
// checked requested: relative, clean but for a leading "./", no ".."). It is
// resolved beneath the workspace ws, open at the symlink-free wsPath, one
// component at a time, each opened by descriptor from ws without
// following anything (lstatBeneath), with every symlink recorded by its
// absolute path. A chain that leaves the workspace — an absolute symlink,
// or a relative one climbing above the root — continues as an absolute
// executable's does (resolveChain); policy.For then allows such a final
// target only inside the read paths. The canonical path of a file found
// inside is wsPath joined with its symlink-free components, so it too is
// free of symlinks, as the launcher, which re-opens it by that path with
// RESOLVE_NO_SYMLINKS, requires; the file itself is opened beneath ws.
func identifyInWorkspace(ws *os.File, wsPath, requested string) (*identified, *Shebang, error) {
	chain, inside, outside, err := resolveBeneath(ws, wsPath, strings.TrimPrefix(requested, "./"))
	if err != nil {
		return nil, nil, wire.Explain(wire.CodeExecutableNotFound, err, "the workspace executable %q %s beneath the workspace %s (it is relative to the workspace root, not to --cwd)",
			requested, chainProblem(err), wsPath)
	}
	if outside != "" {
		more, canonical, err := resolveChain(outside)
		if err != nil {
			return nil, nil, wire.Explain(wire.CodeExecutableNotFound, err, "the workspace executable %q leads to %s, which %s", requested, outside, chainProblem(err))
		}
		f, err := openFileNoFollow(canonical)
		if err != nil {
			return nil, nil, wire.Errorf(wire.CodeExecutableNotFound, "cannot open %s without following symlinks: %v", canonical, err)
		}
		return measure(f, canonical, append(chain, more...))
	}
	canonical := wsPath + "/" + inside
	f, err := openFileBeneath(ws, inside)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeExecutableNotFound, "cannot open %s beneath the workspace without following symlinks: %v", canonical, err)
	}
	return measure(f, canonical, chain)
}

// resolveBeneath resolves rel beneath the workspace ws (at wsPath) as the
// kernel would, but one component at a time and by descriptor. It returns
// the absolute path of each symlink followed, in order, and either inside,
// the final symlink-free path relative to the workspace, or outside, the
// absolute path still to resolve once the chain has left the workspace.
func resolveBeneath(ws *os.File, wsPath, rel string) (chain []string, inside, outside string, err error) {
	var done []string      // resolved components beneath the workspace, none a symlink
	todo := splitPath(rel) // components still to resolve
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case ".":
			continue
		case "..":
			if len(done) == 0 { // above the root: wsPath holds no symlink, so its parent is path.Dir
				return chain, "", "/" + strings.Join(append(splitPath(path.Dir(wsPath)), todo...), "/"), nil
			}
			done = done[:len(done)-1]
			continue
		}
		cur := strings.Join(append(done[:len(done):len(done)], c), "/")
		mode, target, err := lstatBeneath(ws, cur)
		if err != nil {
			return nil, "", "", err
		}
		if mode != modeSymlink {
			done = append(done, c)
			continue
		}
		if hops++; hops > maxHops {
			return nil, "", "", &os.PathError{Op: "resolve", Path: rel, Err: syscall.ELOOP}
		}
		chain = append(chain, wsPath+"/"+cur)
		if path.IsAbs(target) {
			return chain, "", "/" + strings.Join(append(splitPath(target), todo...), "/"), nil
		}
		todo = append(splitPath(target), todo...)
	}
	if len(done) == 0 {
		return nil, "", "", &os.PathError{Op: "resolve", Path: rel, Err: errors.New("it names the workspace root, not a file")}
	}
	return chain, strings.Join(done, "/"), "", nil
}
