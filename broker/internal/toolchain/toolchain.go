package toolchain

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"warrant/internal/envpolicy"
	"warrant/wire"
)

// Host is what discovery knows of the operator: the home directory (the
// broker's $HOME) and the declared variables (<state>/env, --env). A
// layout's place is a declared variable where the operator set one
// (RUSTUP_HOME, PYENV_ROOT, NVM_DIR, …), else its documented default
// beneath Home; nothing is taken from the broker's own environment.
type Host struct {
	Home     string
	Declared map[string]string

	// realHome is Home with its symlinks resolved ("" when it is not a
	// directory), once resolved (homeDone): by one call of Find or
	// Candidates, on its own copy of the Host, never kept beyond it, so
	// that each default place beneath Home costs one lstat a component
	// instead of a walk from the root.
	realHome string
	homeDone bool
}

// Found is the toolchain a program lies in: the identity's label (its
// Vars are Env's names), the variables to set, each sorted by name and
// none the operator declared, and how the layout was recognised.
// Toolchain.Root is canonical: it is the directory to grant read+exec.
type Found struct {
	Toolchain wire.Toolchain
	Env       []wire.EnvVar
	Why       string
}

// maxName is the wire's cap on a toolchain's name.
const maxName = 256

// Layouts is every layout Find knows, in the order it tries them.
const Layouts = "rustup, pyenv, nvm, Volta, SDKMAN!, asdf, mise, Homebrew, a Go root, a JDK"

// layout recognises one toolchain layout from the paths a program was
// reached by (canonical last): a toolchain, or why a program in its
// place is left as it is ("" and nil: not this layout's).
type layout func(h *Host, paths []string) (*Found, string)

var layouts = []layout{rustup, pyenv, nvm, volta, sdkman, asdf, mise, homebrew, goRoot, jdk}

// Find returns the toolchain of the program reached by paths (the
// absolute paths of each symlink hop, then the canonical file: what
// identity records), or nil and why none: a program in no known layout,
// or in one whose toolchain cannot be resolved (a shim that chooses at
// run time, a default toolchain that is not installed), is left as it is
// today. Find reads a few small files by descriptor, never following a
// symlink, each at most maxFile bytes, and lists at most one directory
// (maxEntries names); it writes nothing.
func Find(h Host, paths []string) (*Found, string) {
	if len(paths) == 0 {
		return nil, "no program"
	}
	for _, l := range layouts {
		if f, why := l(&h, paths); f != nil || why != "" {
			if f != nil && len(f.Toolchain.Name) > maxName {
				return nil, fmt.Sprintf("%s names a toolchain longer than %d bytes", paths[len(paths)-1], maxName)
			}
			if f != nil {
				f.finish()
			}
			return f, why
		}
	}
	return nil, fmt.Sprintf("%s is not in a known toolchain layout (%s)", paths[len(paths)-1], Layouts)
}

// Program is the paths identity recorded for exe (its symlink hops, then
// its canonical file), or nil for a workspace executable: discovery never
// follows where the workspace, which a target writes, points.
func Program(exe *wire.Executable) []string {
	if wire.WorkspaceExecutable(exe.Requested) {
		return nil
	}
	return append(slices.Clone(exe.Chain), exe.File.Path)
}

// Interpreter is Program for exe's interpreter, or nil.
func Interpreter(exe *wire.Executable) []string {
	if exe.Interpreter == nil || wire.WorkspaceExecutable(exe.Requested) {
		return nil
	}
	return append(slices.Clone(exe.Interpreter.Chain), exe.Interpreter.File.Path)
}

// found starts a toolchain of kind named name at root.
func found(kind wire.ToolchainKind, name, root, why string) *Found {
	return &Found{Toolchain: wire.Toolchain{Kind: kind, Name: name, Root: root}, Why: why}
}

// set adds name=value unless the operator declared name (the operator's
// value is in the environment already, and wins) or envpolicy refuses it.
func (f *Found) set(h *Host, name, value string) {
	if _, ok := h.Declared[name]; ok || envpolicy.Declare(name, value) != nil {
		return
	}
	f.Env = append(f.Env, wire.EnvVar{Name: name, Value: value})
}

func (f *Found) finish() {
	slices.SortFunc(f.Env, func(a, b wire.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	f.Toolchain.Vars = nil
	for _, kv := range f.Env {
		f.Toolchain.Vars = append(f.Toolchain.Vars, kv.Name)
	}
}

// place is the canonical directory of a layout: the declared variable
// name's value when the operator declared it, else each of defaults
// beneath Home in turn; "" when none is a directory. declared says
// whether the operator chose it.
func (h *Host) place(name string, defaults ...string) (dir string, declared bool) {
	if v, ok := h.Declared[name]; ok {
		return canonicalDir(v), true
	}
	if h.Home == "" {
		return "", false
	}
	for _, d := range defaults {
		if dir := h.homeDir(d); dir != "" {
			return dir, false
		}
	}
	return "", false
}

// homeDir is canonicalDir(Home/rel), rel a clean relative path, resolved
// from the canonical Home: a component that is a symlink hands the whole
// path to canonicalDir.
func (h *Host) homeDir(rel string) string {
	if !h.homeDone {
		h.realHome, h.homeDone = canonicalDir(h.Home), true
	}
	if h.realHome == "" {
		return ""
	}
	cur := h.realHome
	for c := range strings.SplitSeq(rel, "/") {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		switch {
		case err != nil:
			return ""
		case fi.Mode()&os.ModeSymlink != 0:
			return canonicalDir(filepath.Join(h.Home, rel))
		case !fi.IsDir():
			return ""
		}
	}
	return cur
}

// canonicalDir is p with its symlinks resolved when it is a clean
// absolute path to a directory, else "".
func canonicalDir(p string) string {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return ""
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return ""
	}
	return real
}

// beneath is the components of p below dir, when p lies beneath it.
func beneath(p, dir string) ([]string, bool) {
	if dir == "" {
		return nil, false
	}
	rest, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/")
	if !ok || rest == "" {
		return nil, false
	}
	return strings.Split(rest, "/"), true
}

// canonical is the program's own file.
func canonical(paths []string) string { return paths[len(paths)-1] }

// anyBeneath is the first of paths beneath dir, with its components.
func anyBeneath(paths []string, dir string) (string, []string, bool) {
	for _, p := range paths {
		if rest, ok := beneath(p, dir); ok {
			return p, rest, true
		}
	}
	return "", nil, false
}

// validName reports whether s can name a toolchain or version: one path
// component of at most 128 bytes in [A-Za-z0-9._+@-], not "." or "..".
func validName(s string) bool {
	if s == "" || len(s) > 128 || s == "." || s == ".." {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._+@-", c) >= 0) {
			return false
		}
	}
	return true
}

// readError says why a marker file could not be read, in words.
func readError(p string, err error) string {
	switch {
	case errors.Is(err, errNotRegular):
		return p + " is not a regular file"
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("%s is larger than %d bytes", p, maxFile)
	}
	return fmt.Sprintf("%s cannot be read without following a symlink: %v", p, err)
}
