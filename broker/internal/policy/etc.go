package policy

import (
	"path"
)

// etcDir is the runtime path granted entry by entry when it holds a
// secret (splitSecrets); the other runtime paths are granted whole.
const etcDir = "/etc"

// secretNames are the paths beneath /etc withheld by name whatever their
// mode, matched (path.Match) against the path relative to /etc.
var secretNames = []string{"shadow*", "gshadow*", "sudoers*", "master.passwd", "spwd.db", "ssl/private", "ssh/*_key"}

// walkLimits bound the walk of /etc: a directory deeper than depth, or
// one being read when more than entries names have been read in all, is
// withheld whole, and so is a directory whose split would take the
// grants past grants or the withheld paths past withheld.
type walkLimits struct{ depth, entries, grants, withheld int }

// etcLimits are the walk's bounds: a host's /etc has a few thousand
// names; the grants and withheld paths stay within the wire's caps.
var etcLimits = walkLimits{depth: 16, entries: 1 << 15, grants: 512, withheld: 256}

// secret reports whether the entry at rel (relative to /etc) is withheld
// whatever lies beneath it: by its name, or by its mode — a file not
// readable by others, a directory not both readable and searchable by
// them. Root bypasses modes, so for a root broker such a file is a secret
// its owner keeps; a non-root broker may be its owner or in its group.
func secret(rel string, mode uint32, dir bool) bool {
	for _, pat := range secretNames {
		if ok, _ := path.Match(pat, rel); ok {
			return true
		}
	}
	if dir {
		return mode&0o005 != 0o005
	}
	return mode&0o004 == 0
}
