package contract

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tree is a workspace built from a map of relative path to content:
// "dir/" makes a directory, "->target" a symlink, "|fifo" a FIFO,
// anything else a file. It returns the directory, opened, and its path.
func tree(t testing.TB, entries map[string]string) (*os.File, string) {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range entries {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(rel, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(content[2:], p)
		case content == "|fifo":
			err = syscall.Mkfifo(p, 0o644)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, dir
}

// gitProtected protects .git and everything below it, and .envrc.
func gitProtected(p string) bool {
	return p == ".git" || strings.HasPrefix(p, ".git/") || p == ".envrc"
}

func mustDecode(t testing.TB, s string) *Contract {
	t.Helper()
	c, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return c
}

// grammar wraps argv elements (JSON) into a contract named "t".
func grammar(elements string) string {
	return `{"format": 1, "name": "t", "executable": "tool", "argv": [` + elements + `]}`
}
