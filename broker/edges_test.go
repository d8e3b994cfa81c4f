package broker

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackageEdges keeps the rooms' data flow one way (identity → policy →
// journal → executor → evidence, see doc.go): no package under
// broker/internal, and not the executor, depends on the root or on a room
// downstream of it. It asks the go tool for the real dependency sets.
func TestPackageEdges(t *testing.T) {
	const p = "warrant/broker"
	forbidden := map[string][]string{
		p + "/internal/identity":   {p, p + "/internal/policy", p + "/internal/journal", p + "/runner", p + "/internal/probe", p + "/internal/admission"},
		p + "/internal/metadata":   {p, p + "/internal/journal", p + "/runner", p + "/lifecycle", p + "/internal/policy"},
		p + "/internal/protect":    {p, p + "/internal/journal", p + "/runner", p + "/lifecycle", p + "/internal/identity"},
		p + "/internal/aliasscan":  {p, p + "/internal/identity", p + "/internal/policy", p + "/internal/journal", p + "/runner", p + "/internal/probe", p + "/internal/admission"},
		p + "/internal/policy":     {p, p + "/internal/journal", p + "/runner", p + "/internal/probe", p + "/internal/admission"},
		p + "/internal/journal":    {p, p + "/internal/identity", p + "/internal/policy", p + "/runner", p + "/lifecycle", p + "/internal/probe", p + "/internal/admission"},
		p + "/runner":              {p, p + "/internal/journal", p + "/internal/policy", p + "/internal/probe", p + "/internal/seam"},
		p + "/lifecycle":           {p, p + "/internal/journal", p + "/runner"},
		p + "/internal/probe":      {p, p + "/internal/journal"},
		p + "/internal/snapcache":  {p},
		p + "/internal/caches":     {p, p + "/internal/identity", p + "/internal/policy", p + "/internal/journal", p + "/runner", p + "/lifecycle", p + "/internal/probe"},
		p + "/internal/toolchain":  {p, p + "/internal/identity", p + "/internal/policy", p + "/internal/journal", p + "/runner", p + "/lifecycle", p + "/internal/probe", p + "/internal/caches"},
		p + "/internal/server":     {p, p + "/internal/journal"},
		p + "/internal/admission":  {p, p + "/runner", p + "/lifecycle", p + "/internal/probe", p + "/internal/seam", p + "/internal/server", p + "/internal/follow"},
		p + "/internal/statedir":   {p, p + "/internal/identity", p + "/internal/policy", p + "/internal/journal", p + "/runner", p + "/lifecycle", p + "/internal/probe", p + "/internal/caches"},
		p + "/internal/actiondirs": {p, p + "/internal/identity", p + "/internal/policy", p + "/runner", p + "/lifecycle", p + "/internal/probe"},
		p + "/internal/witness":    {p, p + "/internal/identity", p + "/internal/policy", p + "/runner", p + "/lifecycle", p + "/internal/probe"},
		p + "/internal/seam":       {p, p + "/internal/journal"},
		p + "/view":                {p, p + "/client", p + "/internal/journal", p + "/runner", p + "/internal/server"},
		p + "/mcp":                 {p + "/cli"},
		p:                          {p + "/cli", p + "/mcp"}, // view: only its command lines (offers.go), and view imports no room
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[d] = true
		}
		if !deps[pkg] || len(deps) < 10 {
			t.Fatalf("go list -deps %s lists %d packages, not the package and its dependencies; the check would prove nothing", pkg, len(deps))
		}
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s depends on %s: an edge against the pipeline's flow", pkg, b)
			}
		}
	}
}
