package broker

import "testing"

// The predicate a contract's paths are checked with refuses every .git
// and every protect.Paths name at any depth, seen from the workspace
// root (the cwd's own components included), and nothing else.
func TestProtectedBeneath(t *testing.T) {
	for _, c := range []struct {
		cwd, rel string
		want     bool
	}{
		{".", ".", false}, {".", "pkg/x.go", false}, {"sub", "a.txt", false}, {".", ".gitignore", false},
		{".", ".git", true}, {".", ".git/hooks/pre-commit", true}, {"sub", ".git/config", true},
		{".git", ".", true}, {".", ".envrc", true}, {"a", "b/.vscode/settings.json", true},
		{".", ".husky/pre-commit", true}, {".", ".mcp.json", true}, {".", "x/.gitmodules", true},
	} {
		if got := protectedBeneath(c.cwd)(c.rel); got != c.want {
			t.Errorf("cwd %q, path %q: protected %v, want %v", c.cwd, c.rel, got, c.want)
		}
	}
}
