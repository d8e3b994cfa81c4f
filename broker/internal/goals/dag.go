package goals

import (
	"fmt"
	"slices"
	"strings"
)

// checkGraph refuses a step graph with duplicate step ids, dependencies
// on steps that do not exist, or cycles (a step depending on itself is a
// cycle of one), with one ARGUMENTS_INVALID sentence naming every
// duplicate, every missing dependency and the members of a cycle.
func checkGraph(steps []Step) error {
	var problems []string
	seen := map[string]bool{}
	for _, s := range steps {
		if seen[s.ID] {
			problems = append(problems, fmt.Sprintf("step id %q is used twice", s.ID))
		}
		seen[s.ID] = true
	}
	for _, s := range steps {
		for _, d := range s.DependsOn {
			if !seen[d] {
				problems = append(problems, fmt.Sprintf("step %s depends on %q, which is not a step", s.ID, d))
			}
		}
	}
	if len(problems) == 0 {
		if cycle := findCycle(steps); cycle != nil {
			problems = append(problems, "the steps form a cycle: "+strings.Join(cycle, " → "))
		}
	}
	if len(problems) > 0 {
		return invalid("the goal's steps are not a DAG: %s", strings.Join(problems, "; "))
	}
	return nil
}

// findCycle returns the members of one cycle, its first member repeated
// at the end, or nil when the graph (ids unique, dependencies existing)
// has none.
func findCycle(steps []Step) []string {
	index := map[string]int{}
	for i, s := range steps {
		index[s.ID] = i
	}
	const (
		unseen = iota
		onPath
		finished
	)
	mark := make([]int, len(steps))
	var path []string
	var visit func(i int) []string
	visit = func(i int) []string {
		mark[i] = onPath
		path = append(path, steps[i].ID)
		for _, d := range steps[i].DependsOn {
			j := index[d]
			switch mark[j] {
			case onPath:
				at := slices.Index(path, d)
				return append(slices.Clone(path[at:]), d)
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		mark[i] = finished
		return nil
	}
	for i := range steps {
		if mark[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// order returns the steps' indexes with every step after its
// dependencies, ties in document order. The graph has been checked.
func order(steps []Step) []int {
	index := map[string]int{}
	for i, s := range steps {
		index[s.ID] = i
	}
	placed := make([]bool, len(steps))
	out := make([]int, 0, len(steps))
	for len(out) < len(steps) {
		progressed := false
		for i, s := range steps {
			if placed[i] {
				continue
			}
			ready := true
			for _, d := range s.DependsOn {
				ready = ready && placed[index[d]]
			}
			if ready {
				placed[i], progressed = true, true
				out = append(out, i)
			}
		}
		if !progressed {
			panic("goals: internal error: ordering a step graph with a cycle")
		}
	}
	return out
}
