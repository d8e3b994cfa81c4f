package policy

import (
	"fmt"
	"os"
	"os/user"
	"path"
	"path/filepath"

	"warrant/wire"
)

// Withheld are the directories For never grants as a program's own
// directory, because read+execute on them would expose what the sandbox
// exists to keep out: the filesystem root, the home directory, the
// broker's state directory, every directory above it and every directory
// inside it. They are compared by identity (os.SameFile: dev and ino), so
// a symlinked spelling or a bind mount of one is withheld too. The broker
// measures them once, at Open (Withhold).
type Withheld struct {
	dirs  []withheldDir // the program's directory must be none of these
	state withheldDir   // and must not lie inside this one
}

type withheldDir struct {
	is   string // what the directory is, for the refusal
	path string // as measured
	fi   os.FileInfo
	why  string // what granting it would expose
}

// Withhold measures the withheld directories: "/", home (skipped when
// empty or absent) and stateDir, which must exist, with every directory
// above its real path (symlinks resolved).
func Withhold(home, stateDir string) (*Withheld, error) {
	w := &Withheld{}
	add := func(p, is, why string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("withhold %s: %w", is, err)
		}
		w.dirs = append(w.dirs, withheldDir{is: is, path: p, fi: fi, why: why})
		return nil
	}
	if err := add("/", "the filesystem root", "the whole filesystem"); err != nil {
		return nil, err
	}
	if home != "" {
		if _, err := os.Stat(home); err == nil {
			if err := add(home, "the home directory", "the whole home directory"); err != nil {
				return nil, err
			}
		}
	}
	real, err := filepath.EvalSymlinks(stateDir)
	if err != nil {
		return nil, fmt.Errorf("withhold the state directory: %w", err)
	}
	why := "the broker's state directory " + real + " (journal.db, keys/)"
	if err := add(real, "the broker's state directory", why); err != nil {
		return nil, err
	}
	w.state = w.dirs[len(w.dirs)-1]
	w.state.is = "inside the broker's state directory"
	for d := filepath.Dir(real); ; d = filepath.Dir(d) {
		if err := add(d, "above the broker's state directory", why); err != nil {
			return nil, err
		}
		if d == "/" {
			break
		}
	}
	return w, nil
}

// check refuses, with PATH_INVALID, to grant the directory of file (the
// canonical path of the executable or of its interpreter, role naming
// which).
func (w *Withheld) check(role, file string) error {
	if w == nil {
		panic("policy: internal error: For without the withheld directories")
	}
	dir := path.Dir(file)
	fi, err := os.Stat(dir)
	if err != nil {
		return wire.Errorf(wire.CodePathInvalid, "cannot identify the directory of the %s %s: %v", role, file, err)
	}
	d, found := withheldDir{}, false
	for _, c := range w.dirs {
		if os.SameFile(fi, c.fi) {
			d, found = c, true
			break
		}
	}
	for a := path.Dir(dir); !found && a != dir; dir, a = a, path.Dir(a) {
		st, err := os.Stat(a)
		if err != nil {
			return wire.Errorf(wire.CodePathInvalid, "cannot identify %s above the %s %s: %v", a, role, file, err)
		}
		if os.SameFile(st, w.state.fi) {
			d, found = w.state, true
		}
	}
	if !found {
		return nil
	}
	return wire.Errorf(wire.CodePathInvalid,
		"the %s %s is in %s, %s; warrant does not grant that directory to a target, since it would expose %s. "+
			"Move the program into a directory of its own (that directory is granted), or configure a read path "+
			"that holds it and nothing of the broker's: broker serve --read-path DIR (the embedded broker of broker run takes no read paths)",
		role, file, path.Dir(file), d.is, d.why)
}

// kernelShows is what each of wire.KernelFS would show an action.
var kernelShows = map[string]string{"/proc": "the host's other processes", "/sys": "the kernel's and the devices' state",
	"/dev": "the host's devices"}

// CheckReadPaths refuses a configured read path (broker serve
// --read-path) that would open to every action what the sandbox keeps
// from it: one that is, holds or lies inside the broker's state
// directory (its keys and journal) or one of wire.KernelFS, or that is or
// holds the home directory. Paths are compared as their canonical
// spellings (a bind mount of one elsewhere is not seen); one that cannot
// be resolved, or is not clean, is left to Base, which refuses it.
func CheckReadPaths(paths []string, home, stateDir string) error {
	type kept struct {
		dir, what string
		inside    bool // a directory inside it is kept out too
	}
	keep := []kept{{canonicalOr(stateDir), "the broker's state directory " + stateDir + " (its signing keys and journal)", true}}
	for _, d := range wire.KernelFS {
		keep = append(keep, kept{d, d + " (" + kernelShows[d] + ")", true})
	}
	if home != "" {
		keep = append(keep, kept{canonicalOr(home), "the home directory " + home + " (its keys and credentials)", false})
	}
	for _, p := range paths {
		real := canonicalOr(p)
		for _, k := range keep {
			how := ""
			switch {
			case real == k.dir:
				how = "is"
			case beneath(k.dir, real):
				how = "holds"
			case k.inside && beneath(real, k.dir):
				how = "lies inside"
			default:
				continue
			}
			return fmt.Errorf("configured read path %s %s %s, which no action may read; name a directory that holds what programs need and nothing of the host's", p, how, k.what)
		}
	}
	return nil
}

// HomeDir is the home directory of the broker's user: $HOME, or, where it
// is unset (a system service), the user database's; "" without either.
func HomeDir() string {
	if home, err := os.UserHomeDir(); err == nil {
		return home
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}
