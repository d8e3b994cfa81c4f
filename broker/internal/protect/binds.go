package protect

import (
	"cmp"
	"path"
	"slices"
	"strings"

	"warrant/wire"
)

// File types a root records for Binds (the values of syscall's S_IFDIR
// and S_IFREG, which every system Take records on shares).
const (
	typeDir uint32 = 0o040000
	typeReg uint32 = 0o100000
)

// Binds are the protected entries a private mount namespace can guard,
// for the launcher (wire.SpawnRequest.Protect): every root of s that
// existed when s was taken as a directory or regular file beneath the
// workspace, reached without following any symlink, by its plain
// relative path (wire.CheckRelPath holds; never "."), in ascending byte
// order so that a parent precedes its children, each once.
//
// ReadOnly is set for everything but a gitdir: hooks/, config, info/,
// commondir, gitdir and config.worktree of each gitdir and common dir,
// a .git that is a gitfile, a core.hooksPath directory, an included
// config, the Paths (agent and editor configuration, .envrc,
// .gitmodules, .gitconfig, hook directories). A gitdir directory itself
// (.git, .git/modules/x, .git/worktrees/x, a nested sub/.git, a bare
// repository) that holds one of those is bound read-write onto itself:
// git still writes its index, objects, refs, logs and locks there, but
// the directory cannot be renamed or replaced (EBUSY), so what is bound
// beneath it stays where git reads it. An entry beneath a read-only one
// is covered by it and not listed.
//
// Not binds, and so detected only: anything outside the workspace,
// anything found through a symlink, anything absent at Take (a file the
// target creates, such as .git/commondir in a gitdir it may write), and
// everything past wire.MaxProtectBinds (git first, then hook
// directories, agent configuration, direnv, editors; unbound counts
// them).
func (s *Snapshot) Binds() []wire.ProtectBind {
	b := s.bindable()
	b = b[:min(len(b), wire.MaxProtectBinds)]
	slices.SortFunc(b, func(x, y wire.ProtectBind) int { return strings.Compare(x.Path, y.Path) })
	return b
}

// unbound is how many entries Binds left out at its bound.
func (s *Snapshot) unbound() int {
	return max(0, len(s.bindable())-wire.MaxProtectBinds)
}

// bindable is every bind, in priority order (kind, then path).
func (s *Snapshot) bindable() []wire.ProtectBind {
	if s == nil {
		return nil
	}
	type cand struct {
		wire.ProtectBind
		kind kind
	}
	var all []cand
	for _, r := range s.roots {
		if r.pseudo || r.linked || r.typ == 0 || r.path == "." || path.IsAbs(r.path) || wire.CheckRelPath(r.path) != nil {
			continue
		}
		switch {
		case r.shallow && r.typ == typeDir:
			if s.holdsBinds(r.path) {
				all = append(all, cand{wire.ProtectBind{Path: r.path}, r.kind})
			}
		case r.typ == typeDir || r.typ == typeReg:
			all = append(all, cand{wire.ProtectBind{Path: r.path, ReadOnly: true}, r.kind})
		}
	}
	ro := map[string]bool{}
	for _, c := range all {
		ro[c.Path] = ro[c.Path] || c.ReadOnly
	}
	covered := func(p string) bool {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if ro[d] {
				return true
			}
		}
		return false
	}
	slices.SortStableFunc(all, func(x, y cand) int { return cmp.Or(cmp.Compare(x.kind, y.kind), strings.Compare(x.Path, y.Path)) })
	var out []wire.ProtectBind
	seen := map[string]bool{}
	for _, c := range all {
		if !seen[c.Path] && !covered(c.Path) {
			seen[c.Path] = true
			out = append(out, wire.ProtectBind{Path: c.Path, ReadOnly: ro[c.Path]})
		}
	}
	return out
}

// holdsBinds says whether a read-only bind lies beneath the gitdir dir.
func (s *Snapshot) holdsBinds(dir string) bool {
	return slices.ContainsFunc(s.roots, func(r root) bool {
		return !r.pseudo && !r.linked && !r.shallow && (r.typ == typeDir || r.typ == typeReg) && strings.HasPrefix(r.path, dir+"/")
	})
}
