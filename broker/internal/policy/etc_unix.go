//go:build linux || darwin

package policy

import (
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// splitSecrets walks the directory root (canonical) within lim and
// returns what of it may be read, each path to be granted whole, and what
// is withheld, both sorted. A directory none of whose descendants is a
// secret is one grant; one holding a secret is replaced by its entries,
// recursively; a secret (secret) is withheld, and so is a directory
// holding nothing but secrets and symlinks, whole. A symlink is neither:
// reading through it needs a grant on its target, wherever it leads. A
// directory the walk cannot open or finish within lim is withheld whole.
// Everything is opened beneath root's descriptor without following a
// symlink, and each grant is pinned to the object the walk decided on,
// so that one replaced since is never granted in its place.
func splitSecrets(root string, lim walkLimits) (grants []wire.PathPin, withheld []string) {
	w := &etcWalk{lim: lim}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	switch {
	case err != nil:
		if fd >= 0 {
			unix.Close(fd)
		}
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, []string{root}
	case secret(".", uint32(st.Mode), true):
		unix.Close(fd)
		return nil, []string{root}
	}
	switch w.dir(fd, root, "", 0) {
	case clean:
		return []wire.PathPin{pinOf(root, &st)}, nil
	case withheldWhole:
		return nil, []string{root}
	}
	slices.SortFunc(w.grants, func(x, y wire.PathPin) int { return strings.Compare(x.Path, y.Path) })
	slices.Sort(w.withheld)
	return w.grants, w.withheld
}

func pinOf(p string, st *unix.Stat_t) wire.PathPin {
	return wire.PathPin{Path: p, Dev: uint64(st.Dev), Ino: st.Ino} // Dev is int32 on macOS
}

// verdict is what the walk decided for one directory.
type verdict int

const (
	clean         verdict = iota // nothing beneath it is withheld: one grant
	split                        // its grants and withheld paths are listed
	withheldWhole                // nothing beneath it may be read
)

type etcWalk struct {
	lim      walkLimits
	read     int // names read so far
	grants   []wire.PathPin
	withheld []string
}

// dir decides the directory open as fd, at path p (rel relative to the
// root, "" for the root) and depth; it closes fd. When it returns split,
// the directory's readable parts are in w.grants and its secrets in
// w.withheld; otherwise it has added nothing to either.
func (w *etcWalk) dir(fd int, p, rel string, depth int) verdict {
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	if depth > w.lim.depth {
		return withheldWhole
	}
	if w.read >= w.lim.entries {
		return withheldWhole
	}
	names, err := f.Readdirnames(w.lim.entries - w.read + 1)
	w.read += len(names)
	if err != nil && err != io.EOF || w.read > w.lim.entries {
		return withheldWhole // unreadable, or past the bound
	}
	slices.Sort(names)
	g0, s0 := len(w.grants), len(w.withheld)
	var whole []wire.PathPin // this directory's entries granted whole
	var secrets []string     // and withheld
	mixed := false           // a subdirectory was split
	for _, name := range names {
		cp, crel := path.Join(p, name), path.Join(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == unix.ENOENT {
			continue // gone since it was listed
		} else if err != nil {
			secrets = append(secrets, cp) // unreadable: not granted
			continue
		}
		typ := uint32(st.Mode) & unix.S_IFMT
		switch {
		case typ == unix.S_IFLNK:
			continue
		case secret(crel, uint32(st.Mode), typ == unix.S_IFDIR):
			secrets = append(secrets, cp)
			continue
		case typ != unix.S_IFDIR:
			whole = append(whole, pinOf(cp, &st))
			continue
		}
		// Decided on the directory opened, not on the name's stat.
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			if err = unix.Fstat(cfd, &st); err != nil || secret(crel, uint32(st.Mode), true) {
				unix.Close(cfd)
				err = unix.EACCES
			}
		}
		v := withheldWhole
		if err == nil {
			v = w.dir(cfd, cp, crel, depth+1)
		}
		switch v {
		case clean:
			whole = append(whole, pinOf(cp, &st))
		case split:
			mixed = true
		case withheldWhole:
			secrets = append(secrets, cp)
		}
	}
	switch {
	case len(secrets) == 0 && !mixed:
		return clean
	case len(whole) == 0 && !mixed:
		return withheldWhole
	}
	w.grants, w.withheld = append(w.grants, whole...), append(w.withheld, secrets...)
	if len(w.grants) > w.lim.grants || len(w.withheld) > w.lim.withheld {
		w.grants, w.withheld = w.grants[:g0], w.withheld[:s0]
		return withheldWhole
	}
	return split
}
