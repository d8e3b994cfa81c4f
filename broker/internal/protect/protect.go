package protect

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"warrant/wire"
)

// Paths is the closed default list, relative to the workspace root, of
// what git, direnv, editors and coding agents run or obey outside any
// sandbox, beside every repository's own (GitEntries). A trailing slash
// protects everything beneath a directory. .gitattributes is not on it:
// it can name a filter or diff driver, but the driver's command comes
// only from a config file, which is.
var Paths = []string{".gitmodules", ".gitconfig", ".husky/", ".githooks/", // git; the usual core.hooksPath directories
	".claude/", ".mcp.json", ".codex/", ".cursor/", ".agents/", // coding agents
	".envrc", ".vscode/", ".idea/", ".devcontainer/"} // direnv, editors

// GitEntries are protected in every gitdir and common dir git resolves
// for a repository beneath the workspace (the .git entry itself, whether
// directory, gitfile or symlink; commondir; .git/worktrees/*;
// .git/modules/*; nested and bare repositories), wherever it lies.
var GitEntries = []string{"hooks/", "config", "info/", "commondir", "gitdir", "config.worktree"}

// Bounds of one snapshot. Past them an entry is recorded as unchecked,
// never as unchanged.
const (
	maxGitdirs = 256 // gitdirs and common dirs resolved
	maxDepth   = 8   // directories beneath a modules/ directory searched
	maxEntries = 10000
	maxBytes   = 64 << 20 // hashed in all
	maxFile    = 16 << 20 // hashed of one file
	maxFollow  = 64       // symlinks followed to where they resolve
	maxPerRoot = 32       // changes Diff lists under one root before it summarises
)

// The bounds of the search for repositories beneath the workspace: the
// alias scan's own, which an admitted workspace is within. Only tests
// change them.
var (
	maxScanNames = 250_000
	maxScanDepth = 512
)

// The bounds of the config files parsed a snapshot: each repository
// parses each file its config includes once (a shared one is read once),
// so these cap what a maze of includes costs. Only tests change them.
var (
	maxConfigFiles       = 1024
	maxConfigBytes int64 = 16 << 20
)

// Unchecked is the state of an entry past the bounds or that could not
// be read; Absent of one that does not exist.
const (
	Unchecked = "unchecked"
	Absent    = "absent"
)

// ScanBound is the entry recorded (unchecked) when the search for
// repositories stopped at its bounds: repositories past them are not
// watched, and the listing says so at every run.
const ScanBound = "(repositories past the scan's bounds)"

// Resolution entries: beside a redirection file (a .git gitfile or
// symlink, commondir, a symlink), what it resolves to; beside a config,
// the core.hooksPath it sets.
const (
	resolvesTo = " (resolves to)"
	hooksPath  = " (core.hooksPath)"
	outsideWS  = " outside the workspace"
)

// kind orders the listing: git first, then hook directories, agent
// configuration, direnv, editors.
type kind uint8

const (
	kindGit kind = iota
	kindHooks
	kindAgent
	kindShell
	kindEditor
)

// root is one protected path and everything recorded beneath it.
type root struct {
	path    string // relative to the workspace, in plain form; absolute when outside it
	kind    kind
	shallow bool   // a gitdir: only the directory itself, never its objects
	linked  bool   // found through a symlink: detected, never bound
	pseudo  bool   // a resolution entry: recorded by resolving again, not by path
	typ     uint32 // S_IFDIR or S_IFREG when recorded so; else 0
}

// Snapshot is the state of every protected entry of one workspace:
// path → "sha256:HEX mode:OOOO" for a file, "symlink:HEX" (of its
// target), "dir mode:OOOO", another type by its mode, Absent or
// Unchecked; a path outside the workspace is absolute. Resolution
// entries ("PATH (resolves to)", "CONFIG (core.hooksPath)") hold a quoted
// location or a config value's digest ("value sha256:HEX"). It holds the workspace open until Again or Release.
type Snapshot struct {
	ws      *os.File
	fd      int
	wsPath  string // the workspace's path, from its descriptor
	roots   []root // what was recorded, so that Again records it too
	rooted  map[string]int
	tops    []string // worktrees found (directories holding .git), so that Again resolves them again
	gitdirs []gitdir // resolved, likewise
	entries map[string]string
	rootOf  map[string]int // entry → its root, for Diff's order
	bytes   int64
	follows int
	cfgs    map[string]cfgFile // config files read, by location: each read once
	nconfig int                // config files parsed (once per repository)
	cbytes  int64              // bytes of config parsed
}

// cfgFile is a config file as read: its bytes, whether a symlink led to
// it, or why it could not be read.
type cfgFile struct {
	b      []byte
	linked bool
	err    error
}

// gitdir is a gitdir or common dir found, with the worktree it serves
// ("" when unknown) for a relative core.hooksPath.
type gitdir struct {
	loc, top string
	linked   bool
}

// Len is the number of entries recorded.
func (s *Snapshot) Len() int { return len(s.entries) }

// Diff lists every entry whose state differs between before and after:
// changed, created (before Absent, or Unchecked when no root covered it
// yet) or deleted. An entry unchecked in either is listed too: nothing is
// claimed about it; but one first recorded after the run and absent then
// is not (nothing there to run). The list is in listing order (git, its
// resolution entries first; hook directories, agent configuration,
// direnv, editors; by root and path within each), names every root with
// a change, and holds at most wire.MaxProtectedChanges.
func Diff(before, after *Snapshot) []wire.ProtectedChange {
	var changed []change
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range before.entries {
			if !yield(k) {
				return
			}
		}
		for k := range after.entries {
			if _, dup := before.entries[k]; !dup && !yield(k) {
				return
			}
		}
	}) {
		b, a := before.state(k), after.state(k)
		if _, recorded := before.entries[k]; !recorded && b == Unchecked && a == Absent {
			continue // found after the run only, and absent: nothing to claim, nothing to run
		}
		if b != a || b == Unchecked {
			r, ok := after.rootFor(k)
			if !ok {
				if r, ok = before.rootFor(k); !ok {
					r = root{path: k}
				}
			}
			changed = append(changed, change{wire.ProtectedChange{Path: display(k), Before: b, After: a}, r.kind, r.pseudo, display(r.path)})
		}
	}
	return listing(changed)
}

// state is k's recorded state; a path not recorded is Absent when the
// nearest entry recorded above it was listed whole (or is no
// directory), else Unchecked (a gitdir's own directory is not listed).
func (s *Snapshot) state(k string) string {
	if v, ok := s.entries[k]; ok {
		return v
	}
	for p := k; ; {
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			return Unchecked
		}
		p = p[:i]
		if v, ok := s.entries[p]; ok {
			if r, ok := s.rootOf[p]; v == Unchecked || ok && s.roots[r].shallow && s.roots[r].path == p {
				return Unchecked
			}
			return Absent
		}
	}
}

// rootFor is the root k was recorded under, or one covering it.
func (s *Snapshot) rootFor(k string) (root, bool) {
	if i, ok := s.rootOf[k]; ok {
		return s.roots[i], true
	}
	for _, r := range s.roots {
		if strings.HasPrefix(k, r.path+"/") {
			return r, true
		}
	}
	return root{}, false
}

// display is a path as the listing shows it: quoted when it is not
// printable UTF-8 (a name is the target's to choose), within the wire's
// cap.
func display(p string) string {
	if !utf8.ValidString(p) || strings.ContainsFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) {
		p = strconv.QuoteToASCII(p)
	}
	if len(p) > 4000 {
		p = p[:4000] + "..."
	}
	return p
}
