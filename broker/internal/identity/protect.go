package identity

import (
	"errors"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// Rule says which workspaces a protected place refuses. Every rule
// refuses the place itself.
type Rule uint8

const (
	// Overlap refuses a workspace that is, contains or lies inside the
	// place (the state directory, the socket directory, the binaries'
	// directories).
	Overlap Rule = iota + 1
	// Itself refuses only the place itself: a directory inside it is fine
	// (/, the home directory).
	Itself
	// ItOrAbove refuses a workspace that is or contains the place: a
	// directory inside it is fine (/usr, /etc, a configured read path).
	ItOrAbove
	// ItOrBelow refuses a workspace that is or lies inside the place
	// (/proc, /sys, /dev).
	ItOrBelow
)

func (r Rule) above() bool { return r == Overlap || r == ItOrAbove }
func (r Rule) below() bool { return r == Overlap || r == ItOrBelow }

// refuses is how a refusal describes the rule.
func (r Rule) refuses() string {
	switch r {
	case Overlap:
		return "any workspace that is, contains or lies inside it"
	case Itself:
		return "it as a workspace (a directory inside it is fine)"
	case ItOrAbove:
		return "any workspace that is or contains it (a directory inside it is fine)"
	case ItOrBelow:
		return "any workspace that is or lies inside it"
	}
	panic(fmt.Sprintf("identity: internal error: rule %d", r))
}

// Place is one directory whose authority no workspace may hold, as the
// broker names it.
type Place struct {
	Name     string // how a refusal names it, e.g. "the broker's state directory"
	Path     string // absolute; opened following symlinks: it is the broker's own configuration, not a request
	Holds    string // what it holds, for the refusal (optional), e.g. "journal.db, keys/, run/, actions/"
	Rule     Rule
	Optional bool // absent on this host (or not a directory): skipped (a system root, the home directory)
}

// Protected is the set of places no workspace may overlap, each held open
// by descriptor from Protect on, so that the comparison at Resolve is by
// directory identity (dev, ino) and never by path: a symlinked spelling
// or a bind mount of a place has the same identity. It is read-only
// after Protect and safe for concurrent use. Close releases it.
type Protected struct {
	places []heldPlace
	owner  bool // Close closes the descriptors (false for a view made by Without)
}

type heldPlace struct {
	Place
	f   *os.File
	key dirKey
}

// dirKey is a directory's identity for overlap: (dev, ino) only. The
// mount id and birth time are left out on purpose: a bind mount of a
// directory has another mount id and the same (dev, ino), and it is the
// same authority.
type dirKey struct{ dev, ino uint64 }

// maxDepth bounds a walk up to the root; a path of PATH_MAX bytes has
// fewer components.
const maxDepth = 2048

// Protect opens every place. A place that is absent is an error unless
// it is Optional. Every walk a check will make from a place is made once
// here, so that a place the broker cannot walk up from fails Open rather
// than every submit.
func Protect(places []Place) (_ *Protected, err error) {
	p := &Protected{owner: true}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	for _, pl := range places {
		if !path.IsAbs(pl.Path) || pl.Name == "" || pl.Rule < Overlap || pl.Rule > ItOrBelow {
			return nil, fmt.Errorf("protect %q (%s): not an absolute path with a name and a rule", pl.Path, pl.Name)
		}
		f, err := openDirAt(unix.AT_FDCWD, pl.Path)
		if err != nil {
			if pl.Optional && (errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR)) {
				continue
			}
			return nil, fmt.Errorf("protect %s %s: %w", pl.Name, pl.Path, err)
		}
		n, err := nodeAt(int(f.Fd()), "")
		if err == nil && pl.Rule.above() {
			_, err = ancestry(f)
		}
		p.places = append(p.places, heldPlace{Place: pl, f: f, key: n.dirKey}) // held, so that an error closes it
		if err != nil {
			return nil, fmt.Errorf("protect %s %s: %w", pl.Name, pl.Path, err)
		}
	}
	return p, nil
}

// Without is p without the places at path, sharing p's descriptors: Close
// p, not the view. Only the capability probe uses it, for its scratch
// workspace under <state>/probe, which the broker makes itself inside its
// state directory; the probe's workspace is still checked against every
// other place, keys/, run/ and actions/ among them.
func (p *Protected) Without(path string) *Protected {
	v := &Protected{}
	for _, h := range p.places {
		if h.Path != path {
			v.places = append(v.places, h)
		}
	}
	return v
}

// Close closes every descriptor.
func (p *Protected) Close() {
	if p == nil || !p.owner {
		return
	}
	for _, h := range p.places {
		h.f.Close()
	}
	p.places = nil
}

// check refuses, with PATH_INVALID and a sentence naming the overlap, a
// workspace (open at ws, requested as name) that overlaps a place. It
// walks up from the workspace by descriptor once, and from each place
// whose rule refuses a workspace containing it, each walk to the root: a
// place moved since Protect is found where it is now. No walk stops early
// at a directory another walk passed: through a bind mount one directory
// has two ways up (".." follows the mount it was reached by), so what lies
// above a (dev, ino) is not one answer
// (TestOverlapThroughABindMountIsRefused).
func (p *Protected) check(ws *os.File, name string) error {
	up, err := ancestry(ws)
	if err != nil {
		return wire.Errorf(wire.CodePathInvalid, "cannot walk up from the workspace %s to the root by descriptor: %v", name, err)
	}
	for _, h := range p.places { // the place itself first: the most exact sentence
		if h.key == up[0] {
			return refuseOverlap(name, "is", h)
		}
	}
	for _, h := range p.places {
		how := ""
		switch {
		case h.Rule.below() && contains(up[1:], h.key):
			how = "lies inside"
		case h.Rule.above():
			chain, err := ancestry(h.f)
			if err != nil {
				return wire.Errorf(wire.CodePathInvalid, "cannot check the workspace %s against %s %s: %v", name, h.Name, h.Path, err)
			}
			if contains(chain, up[0]) {
				how = "contains"
			}
		}
		if how != "" {
			return refuseOverlap(name, how, h)
		}
	}
	return nil
}

func refuseOverlap(name, how string, h heldPlace) error {
	holds := ""
	if h.Holds != "" {
		holds = " (" + h.Holds + ")"
	}
	return wire.Errorf(wire.CodePathInvalid,
		"the workspace %s %s %s %s%s, and the whole workspace is writable by the target; warrant refuses %s; "+
			"run broker from your project's directory, or pass --workspace DIR, %s",
		name, how, h.Name, h.Path, holds, h.Rule.refuses(), elsewhere(how, h))
}

// elsewhere is which directory a workspace refused so may be instead
// (the workspace is the current directory unless --workspace says).
func elsewhere(how string, h heldPlace) string {
	switch {
	case how == "contains":
		return "a directory that does not contain " + h.Path
	case how == "lies inside":
		return "a directory outside " + h.Path
	case h.Rule == Itself:
		return "a directory inside it"
	}
	return "another directory"
}

func contains(keys []dirKey, k dirKey) bool {
	for _, c := range keys {
		if c == k {
			return true
		}
	}
	return false
}

// ancestry is the identity of the directory open at f and of every
// directory above it, up to the root, never found by path: each level is
// a stat of "..", "../..", … from f's descriptor, resolved by the kernel
// as opening ".." from each level in turn would be (".." at the root of a
// mount leaves by the mount it was reached by), one system call a level
// where opening, measuring and closing each level took three. The root is
// the level whose ".." is itself on the same mount: a bind mount of a
// directory onto one below it has a ".." of the same (dev, ino) on
// another (TestWalkUpFromABindMountOntoItsOwnChild). Every reanchor
// levels the walk goes on from a descriptor of the level reached, so
// that no path it resolves is longer than 3 × reanchor bytes.
func ancestry(f *os.File) ([]dirKey, error) {
	last, err := nodeAt(int(f.Fd()), "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	chain := []dirKey{last.dirKey}
	from, anchor := int(f.Fd()), -1 // anchor: the descriptor this walk opened last, and must close
	defer func() {
		if anchor >= 0 {
			unix.Close(anchor)
		}
	}()
	up := ""
	for range maxDepth {
		if len(up) == 3*reanchor {
			fd, err := openDirFD(from, up)
			if err != nil {
				return nil, err
			}
			if anchor >= 0 {
				unix.Close(anchor)
			}
			anchor, from, up = fd, fd, ""
		}
		up += "../"
		n, err := nodeAt(from, up)
		if err != nil {
			return nil, fmt.Errorf("a directory above %s: %w", f.Name(), err)
		}
		if n == last {
			return chain, nil
		}
		chain, last = append(chain, n.dirKey), n
	}
	return nil, fmt.Errorf("more than %d directories above it", maxDepth)
}

// reanchor is how many levels ancestry resolves from one descriptor.
const reanchor = 64

// orDot is how an error names nodeAt's name: "." for the descriptor
// itself.
func orDot(name string) string {
	if name == "" {
		return "."
	}
	return name
}

// node is a directory as a walk up reaches it: its identity and the mount
// it was reached by (0 where unknown, macOS), on which ".." depends.
type node struct {
	dirKey
	mnt uint64
}
