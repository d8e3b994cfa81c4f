package policy

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"warrant/internal/landlockabi"
	"warrant/wire"
)

// runtimePaths are the read+execute runtime paths of the default policy
// (docs/architecture.md §2.5); only those present on the host are listed.
var runtimePaths = []string{"/bin", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/usr"}

// devices are the character devices every target may read and write.
var devices = []string{"/dev/null", "/dev/random", "/dev/urandom", "/dev/zero"}

// NetABI is the least Landlock ABI that handles TCP bind/connect.
const NetABI = landlockabi.TCP

// Base is the part of the default policy that does not depend on the
// action: runtime paths that exist, the operator's configured extras, the
// devices and the Landlock floor, each path pinned. Every path is
// canonical (no symlink on the way: the launcher opens them without
// following any), and a path beneath another one is left out: on a
// merged-/usr host /bin is the symlink usr/bin, covered by /usr. /etc is
// granted whole only when it holds no secret; otherwise entry by entry
// without its secrets (splitSecrets), as it is now: the broker calls Base
// once, when it starts.
func Base(extras []string) (wire.Policy, error) {
	var read, excluded []string
	var entries []wire.PathPin
	for _, p := range runtimePaths {
		real, err := filepath.EvalSymlinks(p)
		switch {
		case err != nil:
		case p == etcDir:
			grants, withheld := splitSecrets(real, etcLimits)
			if len(withheld) == 0 {
				read = append(read, real) // clean, or absent: pinAll decides
			} else {
				entries, excluded = grants, withheld
			}
		default:
			read = append(read, real)
		}
	}
	for _, p := range extras {
		if !path.IsAbs(p) || path.Clean(p) != p {
			return wire.Policy{}, fmt.Errorf("configured read path %q is not a clean absolute path", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return wire.Policy{}, fmt.Errorf("configured read path: %w", err)
		}
		read = append(read, real)
	}
	read = covering(read)
	// What a configured read path covers is the operator's decision.
	uncovered := func(p string) bool { return !slices.ContainsFunc(read, func(r string) bool { return beneath(p, r) }) }
	pol := wire.Policy{
		ReadExec:       read,
		ReadWrite:      []string{},
		Devices:        slices.Clone(devices),
		MinLandlockABI: landlockabi.Floor(landlockabi.Running()),
		Excluded:       slices.DeleteFunc(excluded, func(p string) bool { return !uncovered(p) }),
	}
	for _, e := range entries { // pinned by the walk, sorted
		if uncovered(e.Path) {
			pol.ReadEntries, pol.Pins = append(pol.ReadEntries, e.Path), append(pol.Pins, e)
		}
	}
	if err := pinAll(&pol); err != nil {
		return wire.Policy{}, err
	}
	return pol, nil
}

// covering sorts paths and drops duplicates and any path beneath another.
func covering(paths []string) []string {
	slices.Sort(paths)
	var out []string
	for _, p := range slices.Compact(paths) {
		if n := len(out); n == 0 || !beneath(p, out[n-1]) {
			out = append(out, p)
		}
	}
	return out
}

// beneath reports whether p is dir or lies beneath it.
func beneath(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// pinAll pins every path of pol not pinned yet, keeping the pins sorted
// by path.
func pinAll(pol *wire.Policy) error {
	for _, list := range [][]string{pol.ReadExec, pol.ReadWrite, pol.Devices, pol.ReadEntries} {
		for _, p := range list {
			if _, ok := pol.Pin(p); ok {
				continue
			}
			pp, err := pin(p)
			if err != nil {
				return fmt.Errorf("pin policy path %s: %w", p, err)
			}
			i, _ := slices.BinarySearchFunc(pol.Pins, p, func(x wire.PathPin, p string) int { return strings.Compare(x.Path, p) })
			pol.Pins = slices.Insert(pol.Pins, i, pp)
		}
	}
	return nil
}

// For is the default policy for one executable in the workspace at the
// canonical path ws: the base policy plus the directory holding the
// executable (and its interpreter) when neither the runtime paths nor the
// workspace (read-write already) cover it. The install prefix granted is the
// file's own directory, never a parent: widening it to, say, the parent of
// a "bin" directory could expose a home directory. Operators who need a
// wider prefix (e.g. /opt/go) configure it as an extra read path. A
// directory w withholds (the root, the home directory, the state
// directory, above or inside it) is never granted: the action is refused
// with PATH_INVALID and a sentence naming the read path to configure
// instead, and so is a directory that holds or lies in what /etc
// withholds (pol.Excluded). A workspace executable (wire.WorkspaceExecutable) whose chain
// leads outside the workspace is allowed only to a file the read paths
// already cover; anything else is refused with PATH_INVALID, and no
// directory is ever granted for it.
func For(base wire.Policy, w *Withheld, ws string, exe wire.Executable) (wire.Policy, error) {
	if !path.IsAbs(ws) {
		panic("policy: internal error: For without the workspace's path")
	}
	p := base
	p.ReadExec = slices.Clone(p.ReadExec)
	covered := func(dir string) bool {
		if beneath(dir, ws) {
			return true
		}
		for _, r := range slices.Concat(p.ReadExec, p.ReadEntries) {
			if beneath(dir, r) {
				return true
			}
		}
		return false
	}
	if f := exe.File.Path; wire.WorkspaceExecutable(exe.Requested) && !covered(path.Dir(f)) {
		return wire.Policy{}, wire.Errorf(wire.CodePathInvalid,
			"the workspace executable %q leads to %s, outside the workspace %s and outside every read path (%s); "+
				"a workspace executable may lead outside only to a file every action can already read. "+
				"Point it at a file inside the workspace or under a read path, or configure a read path that holds it: broker serve --read-path DIR (the embedded broker of broker run takes no read paths)",
			exe.Requested, f, ws, strings.Join(p.ReadExec, " "))
	}
	add := func(role, file string) error {
		dir := path.Dir(file)
		if covered(dir) {
			return nil
		}
		if err := w.check(role, file); err != nil {
			return err
		}
		if i := slices.IndexFunc(p.Excluded, func(x string) bool { return beneath(x, dir) || beneath(dir, x) }); i >= 0 {
			return wire.Errorf(wire.CodePathInvalid,
				"the %s %s is in %s, which holds %s, withheld from every action; move the program into a directory of its own",
				role, file, dir, p.Excluded[i])
		}
		p.ReadExec = append(p.ReadExec, dir)
		return nil
	}
	if err := add("executable", exe.File.Path); err != nil {
		return wire.Policy{}, err
	}
	if exe.Interpreter != nil {
		if err := add("interpreter", exe.Interpreter.File.Path); err != nil {
			return wire.Policy{}, err
		}
	}
	slices.Sort(p.ReadExec)
	p.ReadExec = slices.Compact(p.ReadExec)
	p.Pins = slices.Clone(p.Pins)
	if err := pinAll(&p); err != nil {
		return wire.Policy{}, wire.Errorf(wire.CodeIdentityDrift, "the executable's directory cannot be pinned: %v", err)
	}
	return p, nil
}

// WithReadWrite is pol with the directory dir added to its read-write
// paths, pinned: a workspace's cache (the broker's caches room). dir
// must be canonical, as every policy path is: the launcher opens it
// without following symlinks and grants it only if it is its pin.
func WithReadWrite(pol wire.Policy, dir string) (wire.Policy, error) {
	if !path.IsAbs(dir) || path.Clean(dir) != dir {
		panic("policy: internal error: read-write path " + dir + " is not clean and absolute")
	}
	pol.ReadWrite = append(slices.Clone(pol.ReadWrite), dir)
	slices.Sort(pol.ReadWrite)
	pol.ReadWrite = slices.Compact(pol.ReadWrite)
	pol.Pins = slices.Clone(pol.Pins)
	if err := pinAll(&pol); err != nil {
		return wire.Policy{}, wire.Errorf(wire.CodeIdentityDrift, "the read-write path %s cannot be pinned: %v", dir, err)
	}
	return pol, nil
}
