package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"warrant/wire"
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

// etcWords is the /etc part of pol in words, "" when /etc is granted
// whole or absent: the directory (dir, /private/etc on macOS) and what of
// it is withheld, relative to it, with at most about max bytes of names
// before "and N more".
func etcWords(pol *wire.Policy, max int) (dir, words string) {
	if len(pol.Excluded) == 0 {
		return "", ""
	}
	dir = pol.Excluded[0]
	if len(pol.ReadEntries) == 0 && len(pol.Excluded) == 1 {
		return dir, fmt.Sprintf("Withheld whole: %s, decided when the broker made the policy (at its start): it holds secrets, "+
			"and the walk found nothing else in it to grant within its bounds.", dir)
	}
	for _, p := range slices.Concat(pol.ReadEntries, pol.Excluded) {
		for dir != "/" && (!beneath(p, dir) || p == dir) {
			dir = path.Dir(dir)
		}
	}
	var names []string
	n := 0
	for i, p := range pol.Excluded {
		if n > max {
			names = append(names, fmt.Sprintf("and %d more (--full lists them)", len(pol.Excluded)-i))
			break
		}
		names = append(names, strings.TrimPrefix(p, strings.TrimSuffix(dir, "/")+"/"))
		n += len(names[len(names)-1]) + 2
	}
	return dir, fmt.Sprintf("Of %[1]s, the broker withheld when it made the policy (at its start) what is secret by its name or not readable by others: %[2]s. "+
		"The rest of %[1]s as it was then is readable by name (%[3]d grants; a symlink where it leads to something readable; "+
		"%[1]s itself and a directory holding a secret cannot be listed); "+
		"an entry added or replaced since is not, except inside a directory granted whole, where a secret added since is readable until the broker restarts.",
		dir, strings.Join(names, ", "), len(pol.ReadEntries))
}
