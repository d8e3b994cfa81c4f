package protect

import (
	"cmp"
	"fmt"
	"slices"

	"warrant/wire"
)

// change is one listed difference with the root it belongs to.
type change struct {
	wire.ProtectedChange
	kind     kind
	resolved bool // a resolution entry: it explains the lines after it
	root     string
}

// listing orders changes by kind (resolution entries first), then root,
// then path, and bounds them
// to wire.MaxProtectedChanges so that one noisy root cannot hide another:
// every root with a change gets a share of at most maxPerRoot lines (the
// largest share the bound allows, at least one), and a root over its
// share ends with a line that counts the rest.
func listing(cs []change) []wire.ProtectedChange {
	slices.SortStableFunc(cs, func(a, b change) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), -boolCmp(a.resolved, b.resolved), cmp.Compare(a.root, b.root), cmp.Compare(a.Path, b.Path))
	})
	var groups [][]change
	for i := 0; i < len(cs); {
		j := i + 1
		for j < len(cs) && cs[j].kind == cs[i].kind && cs[j].resolved == cs[i].resolved && cs[j].root == cs[i].root {
			j++
		}
		groups = append(groups, cs[i:j])
		i = j
	}
	budget := wire.MaxProtectedChanges
	var rest []change
	if len(groups) > budget { // one line each for as many roots as fit, one for the others
		for _, g := range groups[budget-1:] {
			rest = append(rest, g...)
		}
		groups = groups[:budget-1]
		budget--
	}
	share := 1
	for share < maxPerRoot && lines(groups, share+1) <= budget {
		share++
	}
	var out []wire.ProtectedChange
	for _, g := range groups {
		if len(g) <= share {
			for _, c := range g {
				out = append(out, c.ProtectedChange)
			}
			continue
		}
		for _, c := range g[:share-1] {
			out = append(out, c.ProtectedChange)
		}
		out = append(out, wire.ProtectedChange{Path: fmt.Sprintf("%s/ (%d more changes not listed)", g[0].root, len(g)-share+1),
			Before: "…", After: "…"})
	}
	if len(rest) > 0 {
		out = append(out, wire.ProtectedChange{Path: fmt.Sprintf("(%d more changes under other roots not listed)", len(rest)),
			Before: "…", After: "…"})
	}
	return out
}

// lines is how many lines groups take with share lines a root.
func lines(groups [][]change, share int) int {
	n := 0
	for _, g := range groups {
		n += min(len(g), share)
	}
	return n
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
