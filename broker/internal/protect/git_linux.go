package protect

import (
	"crypto/sha256"
	"encoding/hex"
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

// config reads the config of common (and g's config.worktree when it
// sets extensions.worktreeConfig) as git does, includes followed: each
// file included is a root, and so is each directory a core.hooksPath
// names (relative to the worktree, where git runs hooks; "~/" is $HOME).
// Each file is parsed once, its effect (the last core.hooksPath set
// within it, the depth of its includes) memoised, so a maze of includes
// costs what its distinct files do; a cycle is git's include depth
// exceeded. The destination git ends with is recorded beside the config:
// readable when in the workspace, else by the value's digest.
func (s *Snapshot) config(g gitdir, common string) {
	cfg := path.Join(common, "config")
	type effect struct {
		hooks  string // the state of the last core.hooksPath set, "" when none
		height int    // include depth beneath
		ok     bool
	}
	worktree := false
	memo := map[string]*effect{}
	var visit func(file string, linked bool) effect
	visit = func(file string, linked bool) (e effect) {
		if m, seen := memo[file]; seen {
			if m == nil {
				return effect{} // a cycle: git stops at its include depth
			}
			return *m
		}
		memo[file] = nil
		defer func() { memo[file] = &e }()
		if s.nconfig >= maxConfigFiles || s.cbytes >= maxConfigBytes {
			s.pseudo(ScanBound, Unchecked)
			return effect{}
		}
		c, ok := s.cfgs[file]
		if !ok {
			c.b, c.linked, c.err = s.readFile(file, MaxConfig)
			s.cfgs[file] = c
		}
		if c.err == unix.ENOENT || c.err == unix.ENOTDIR {
			return effect{ok: true}
		}
		if c.err != nil {
			return effect{}
		}
		s.nconfig++
		if s.cbytes += int64(len(c.b)); s.cbytes > maxConfigBytes {
			s.pseudo(ScanBound, Unchecked)
			return effect{}
		}
		linked = linked || c.linked
		e.ok = true
		GitConfig(c.b, func(name, v string, isSet bool) {
			switch {
			case name == "extensions.worktreeconfig" && file == cfg:
				worktree = gitBool(v, isSet)
			case !isSet:
			case name == "core.hookspath":
				e.hooks = s.hooksDir(g, v, linked)
			case name == "include.path" || strings.HasPrefix(name, "includeif.") && strings.HasSuffix(name, ".path"):
				e.height = max(e.height, 1)
				p, known := expandHome(v)
				if !known {
					e.ok = false
					return
				}
				inc, linked2, err := s.resolve(path.Dir(file), p)
				if err != nil {
					e.ok = false
					return
				}
				s.add(root{path: inc, kind: kindGit, linked: linked || linked2})
				sub := visit(inc, linked || linked2)
				e.ok = e.ok && sub.ok
				e.height = max(e.height, sub.height+1)
				if sub.hooks != "" {
					e.hooks = sub.hooks
				}
			}
		})
		return e
	}
	top := visit(cfg, g.linked)
	ok, hooks := top.ok && top.height <= maxIncludes, top.hooks
	if worktree {
		w := visit(path.Join(g.loc, "config.worktree"), g.linked)
		ok = ok && w.ok && w.height <= maxIncludes
		if w.hooks != "" {
			hooks = w.hooks
		}
	}
	switch {
	case !ok:
		s.pseudo(cfg+hooksPath, Unchecked)
	case hooks != "":
		s.pseudo(cfg+hooksPath, hooks)
	default:
		s.pseudo(cfg+hooksPath, Absent)
	}
}

// hooksDir makes the directory the core.hooksPath value v names a root
// and returns the state recorded for it: the directory, quoted, when it
// lies in the workspace; else the value's digest (a config's value is
// never echoed).
func (s *Snapshot) hooksDir(g gitdir, v string, linked bool) string {
	p, known := expandHome(v)
	if !known {
		return Unchecked
	}
	if g.top == "" && !path.IsAbs(p) {
		return valueOf(v) // relative to a worktree not found here: the config is watched
	}
	dir, linked2, err := s.resolve(g.top, p)
	if err != nil {
		return Unchecked
	}
	s.add(root{path: dir, kind: kindHooks, linked: linked || linked2 || g.linked})
	if path.IsAbs(dir) {
		return valueOf(v) + outsideWS
	}
	return s.describe(dir)
}

// valueOf is a config value as a state: its digest.
func valueOf(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "value sha256:" + hex.EncodeToString(sum[:])
}

// gitBool is git_config_bool: a key without "=", true/yes/on or a
// nonzero integer is true.
func gitBool(v string, set bool) bool {
	if !set {
		return true
	}
	switch strings.ToLower(v) {
	case "true", "yes", "on":
		return true
	}
	n, err := strconv.ParseInt(v, 0, 64)
	return err == nil && n != 0
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
