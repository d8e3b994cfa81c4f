package protect

import (
	"os"
	"slices"

	"warrant/wire"
)

// Paths is the closed default list, relative to the workspace root: what
// git, direnv and editors run or obey outside any sandbox. A trailing
// slash protects everything beneath a directory.
var Paths = []string{".git/hooks/", ".git/config", ".gitmodules", ".envrc", ".vscode/", ".idea/", ".devcontainer/",
	".husky/", ".githooks/"} // the usual core.hooksPath directories

// Submodules is where git keeps the gitdirs of submodules (names may
// hold a slash, and a submodule may have its own): each one found gets
// its hooks/ and config protected, as .git's own are.
const Submodules = ".git/modules"

// Bounds of one snapshot. Past them an entry is recorded as unchecked,
// never as unchanged.
const (
	maxGitdirs = 256 // submodule gitdirs, nested ones included
	maxDepth   = 8   // directories beneath .git/modules searched
	maxEntries = 10000
	maxBytes   = 64 << 20 // hashed in all
	maxFile    = 16 << 20 // hashed of one file
)

// Unchecked is the state of an entry past the bounds or that could not
// be read; Absent of one that does not exist.
const (
	Unchecked = "unchecked"
	Absent    = "absent"
)

// Snapshot is the state of every protected entry of one workspace:
// relative path → "sha256:HEX mode:OOOO" for a file, "symlink:HEX" (of
// its target), "dir mode:OOOO", another type by its mode, Absent or
// Unchecked. It holds the workspace open until Again or Release.
type Snapshot struct {
	ws      *os.File
	roots   []string // what was recorded, so that Again records it too
	entries map[string]string
	bytes   int64
}

// Len is the number of entries recorded.
func (s *Snapshot) Len() int { return len(s.entries) }

// Diff lists every entry whose state differs between before and after,
// in path order: changed, created (before Absent or missing) or deleted.
// An entry unchecked in either is listed too: nothing is claimed about
// it.
func Diff(before, after *Snapshot) []wire.ProtectedChange {
	keys := map[string]bool{}
	for k := range before.entries {
		keys[k] = true
	}
	for k := range after.entries {
		keys[k] = true
	}
	var out []wire.ProtectedChange
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		b, a := state(before, k), state(after, k)
		if b != a || b == Unchecked {
			out = append(out, wire.ProtectedChange{Path: k, Before: b, After: a})
		}
	}
	return out
}

func state(s *Snapshot, k string) string {
	if v, ok := s.entries[k]; ok {
		return v
	}
	return Absent
}
