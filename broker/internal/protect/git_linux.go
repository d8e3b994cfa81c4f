package protect

import (
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Bounds of git's own resolution.
const (
	maxHops     = 40      // symlinks in one resolution, as the kernel's MAXSYMLINKS
	maxGitfile  = 1 << 16 // bytes of a gitfile or commondir file
	maxIncludes = 10      // include depth, as git's MAX_INCLUDE_DEPTH
)

// git finds every repository beneath the workspace (a directory holding
// a .git entry of any type, or a bare gitdir) and those prev found,
// resolves each one's gitdir and common dir the way git does, and adds
// what git reads there (GitEntries), the directory core.hooksPath names
// and the files config includes as roots, with a resolution entry beside
// each redirection.
func (s *Snapshot) git(prev *Snapshot) {
	tops, bare, ok := s.discover()
	if !ok {
		s.pseudo(ScanBound, Unchecked)
	}
	var queue []gitdir
	if prev != nil {
		tops = append(tops, prev.tops...)
	}
	seen := map[string]bool{}
	for _, top := range tops {
		if seen[top] {
			continue
		}
		seen[top] = true
		s.tops = append(s.tops, top)
		if g, ok := s.repository(top); ok {
			queue = append(queue, g)
		}
	}
	for _, b := range bare {
		queue = append(queue, gitdir{loc: b, top: b})
	}
	if prev != nil {
		queue = append(queue, prev.gitdirs...)
	}
	done := map[gitdir]bool{}
	for len(queue) > 0 {
		g := queue[0]
		queue = queue[1:]
		if done[gitdir{loc: g.loc, top: g.top}] {
			continue
		}
		done[gitdir{loc: g.loc, top: g.top}] = true
		if len(s.gitdirs) >= maxGitdirs {
			s.pseudo(ScanBound, Unchecked)
			continue
		}
		s.gitdirs = append(s.gitdirs, g)
		queue = append(queue, s.gitEntries(g)...)
	}
}

// repository resolves the .git entry of the worktree top as git's
// setup.c does: a directory is the gitdir; a regular file is a gitfile
// ("gitdir: PATH", relative to top); a symlink is followed to either.
func (s *Snapshot) repository(top string) (gitdir, bool) {
	dotgit := path.Join(top, ".git")
	s.add(root{path: dotgit, kind: kindGit, shallow: true})
	if top != "." {
		s.add(root{path: path.Join(top, ".gitmodules"), kind: kindGit})
	}
	to, linked, err := s.resolve(top, ".git")
	if err != nil {
		s.pseudo(dotgit+resolvesTo, Unchecked)
		return gitdir{}, false
	}
	switch s.typeOf(to) {
	case unix.S_IFDIR:
		if !linked {
			s.pseudo(dotgit+resolvesTo, Absent) // no redirection
		} else {
			s.pseudo(dotgit+resolvesTo, s.describe(to))
		}
		return gitdir{loc: to, top: top, linked: linked}, true
	case unix.S_IFREG:
		b, _, err := s.readFile(to, maxGitfile)
		if err != nil {
			s.pseudo(dotgit+resolvesTo, Unchecked)
			return gitdir{}, false
		}
		p, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
		if !ok || p == "" {
			s.pseudo(dotgit+resolvesTo, "not a gitfile") // git refuses it
			return gitdir{}, false
		}
		g, linked2, err := s.resolve(top, p)
		if err != nil {
			s.pseudo(dotgit+resolvesTo, Unchecked)
			return gitdir{}, false
		}
		s.pseudo(dotgit+resolvesTo, s.describe(g))
		return gitdir{loc: g, top: top, linked: linked || linked2}, true
	}
	s.pseudo(dotgit+resolvesTo, Absent)
	return gitdir{}, false
}

// gitEntries adds g's GitEntries, resolves its commondir, reads the
// config for core.hooksPath and includes, and returns the gitdirs found
// from it: its common dir and, in the workspace, modules/* (submodules)
// and worktrees/* (linked worktrees).
func (s *Snapshot) gitEntries(g gitdir) []gitdir {
	s.add(root{path: g.loc, kind: kindGit, shallow: true, linked: g.linked})
	for _, n := range GitEntries {
		s.add(root{path: path.Join(g.loc, strings.TrimSuffix(n, "/")), kind: kindGit, linked: g.linked})
	}
	var more []gitdir
	common := g.loc
	cfile := path.Join(g.loc, "commondir")
	switch b, linked, err := s.readFile(cfile, maxGitfile); {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		s.pseudo(cfile+resolvesTo, Absent)
	case err != nil:
		s.pseudo(cfile+resolvesTo, Unchecked)
	default:
		c, linked2, err := s.resolve(g.loc, strings.TrimRight(string(b), "\r\n"))
		if err != nil {
			s.pseudo(cfile+resolvesTo, Unchecked)
			break
		}
		s.pseudo(cfile+resolvesTo, s.describe(c))
		common = c
		more = append(more, gitdir{loc: c, top: g.top, linked: g.linked || linked || linked2})
	}
	s.config(g, common)
	if path.IsAbs(g.loc) { // outside: only what this repository's git reads
		return more
	}
	var n int
	for _, d := range []string{g.loc, common} {
		if !path.IsAbs(d) && !s.submodules(path.Join(d, "modules"), 0, &n, func(m string) {
			more = append(more, gitdir{loc: m, linked: g.linked})
		}) {
			s.pseudo(ScanBound, Unchecked)
		}
	}
	if !path.IsAbs(common) {
		names, _ := s.readDir(path.Join(common, "worktrees"))
		for _, name := range names {
			w := path.Join(common, "worktrees", name)
			if s.typeOf(w) == unix.S_IFDIR {
				more = append(more, gitdir{loc: w, top: s.worktreeTop(w), linked: g.linked})
			}
		}
	}
	return more
}

// worktreeTop is the worktree a linked worktree's gitdir w serves (its
// gitdir file names that worktree's .git) when it lies in the
// workspace, else "".
func (s *Snapshot) worktreeTop(w string) string {
	b, _, err := s.readFile(path.Join(w, "gitdir"), maxGitfile)
	if err != nil {
		return ""
	}
	top, _, err := s.resolve(w, path.Dir(strings.TrimRight(string(b), "\r\n")))
	if err != nil || path.IsAbs(top) {
		return ""
	}
	return top
}

// config reads the config of common (and g's config.worktree) as git
// does, includes followed: each file included is a root, and so is each
// directory a core.hooksPath names (relative to the worktree, where git
// runs hooks; "~/" is $HOME). The value git ends with is recorded beside
// the config.
func (s *Snapshot) config(g gitdir, common string) {
	cfg := path.Join(common, "config")
	value, set, ok := "", false, true
	var read func(file string, linked bool, depth int)
	read = func(file string, linked bool, depth int) {
		b, linked2, err := s.readFile(file, maxConfig)
		if err == unix.ENOENT || err == unix.ENOTDIR {
			return
		}
		if err != nil {
			ok = false
			return
		}
		gitConfig(b, func(name, v string, isSet bool) {
			switch {
			case !isSet:
			case name == "core.hookspath":
				value, set = v, true
				p, known := expandHome(v)
				if !known {
					ok = false
					return
				}
				if g.top == "" && !path.IsAbs(p) {
					return // relative to a worktree not found here: the config is watched
				}
				dir, linked3, err := s.resolve(g.top, p)
				if err != nil {
					ok = false
					return
				}
				s.add(root{path: dir, kind: kindHooks, linked: linked || linked2 || linked3 || g.linked})
			case name == "include.path" || strings.HasPrefix(name, "includeif.") && strings.HasSuffix(name, ".path"):
				p, known := expandHome(v)
				if !known {
					ok = false
					return
				}
				inc, linked3, err := s.resolve(path.Dir(file), p)
				if err != nil || depth >= maxIncludes {
					ok = false
					return
				}
				s.add(root{path: inc, kind: kindGit, linked: linked || linked2 || linked3})
				read(inc, linked || linked2 || linked3, depth+1)
			}
		})
	}
	read(cfg, g.linked, 0)
	read(path.Join(g.loc, "config.worktree"), g.linked, 0)
	switch {
	case !ok:
		s.pseudo(cfg+hooksPath, Unchecked)
	case set:
		s.pseudo(cfg+hooksPath, strconv.QuoteToASCII(value))
	default:
		s.pseudo(cfg+hooksPath, Absent)
	}
}

// expandHome is git's interpolate_path for "~/" ($HOME); it reports
// false for what it does not expand ("~user/", "%(prefix)/", "~/"
// without an absolute $HOME).
func expandHome(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "~/"):
		home := os.Getenv("HOME")
		return path.Join(home, p[2:]), path.IsAbs(home)
	case strings.HasPrefix(p, "~"), strings.HasPrefix(p, "%(prefix)/"):
		return "", false
	}
	return p, true
}

// submodules calls found with every submodule gitdir beneath dir (a
// directory holding a HEAD file; its own modules/ searched in turn; any
// other directory is part of a name with a slash). It reports false
// when the search went past maxGitdirs or maxDepth or a directory could
// not be read, true when dir is absent.
func (s *Snapshot) submodules(dir string, depth int, n *int, found func(string)) bool {
	names, err := s.readDir(dir)
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return true
	}
	if err != nil || depth >= maxDepth {
		return false
	}
	ok := true
	for _, name := range names {
		sub := path.Join(dir, name)
		if s.typeOf(sub) != unix.S_IFDIR {
			continue
		}
		if s.typeOf(sub+"/HEAD") == unix.S_IFREG {
			if *n++; *n > maxGitdirs {
				return false
			}
			found(sub)
			ok = s.submodules(sub+"/modules", depth+1, n, found) && ok
		} else {
			ok = s.submodules(sub, depth+1, n, found) && ok
		}
	}
	return ok
}
