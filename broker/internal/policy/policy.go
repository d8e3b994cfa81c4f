package policy

import (
	"fmt"
	"os"
	"path"
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
// devices and the Landlock floor.
func Base(extras []string) (wire.Policy, error) {
	var read []string
	for _, p := range runtimePaths {
		if _, err := os.Stat(p); err == nil {
			read = append(read, p)
		}
	}
	for _, p := range extras {
		if !path.IsAbs(p) || path.Clean(p) != p {
			return wire.Policy{}, fmt.Errorf("configured read path %q is not a clean absolute path", p)
		}
		if _, err := os.Stat(p); err != nil {
			return wire.Policy{}, fmt.Errorf("configured read path: %w", err)
		}
		read = append(read, p)
	}
	slices.Sort(read)
	return wire.Policy{
		ReadExec:       slices.Compact(read),
		ReadWrite:      []string{},
		Devices:        slices.Clone(devices),
		MinLandlockABI: landlockabi.Floor(landlockabi.Running()),
	}, nil
}

// For is the default policy for one executable: the base policy plus
// the directory holding the executable (and its interpreter) when the
// runtime paths do not already cover it. The install prefix granted is the
// file's own directory, never a parent: widening it to, say, the parent of
// a "bin" directory could expose a home directory. Operators who need a
// wider prefix (e.g. /opt/go) configure it as an extra read path. A
// directory w withholds (the root, the home directory, the state
// directory, above or inside it) is never granted: the action is refused
// with PATH_INVALID and a sentence naming the read path to configure
// instead.
func For(base wire.Policy, w *Withheld, exe wire.Executable) (wire.Policy, error) {
	p := base
	p.ReadExec = slices.Clone(p.ReadExec)
	add := func(role, file string) error {
		dir := path.Dir(file)
		for _, r := range p.ReadExec {
			if dir == r || strings.HasPrefix(dir, r+"/") || r == "/" {
				return nil
			}
		}
		if err := w.check(role, file); err != nil {
			return err
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
	return p, nil
}
