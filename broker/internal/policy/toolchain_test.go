package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/wire"
)

// TestWithToolchain: a toolchain's root outside the read paths is
// granted read+exec and pinned, the program's own directory beneath it
// dropped with its pin; one the read paths cover changes nothing; one
// that is, holds or lies in what is withheld is refused, the policy
// untouched.
func TestWithToolchain(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	ws, state, root := filepath.Join(home, "ws"), filepath.Join(home, ".local", "state", "warrant"), filepath.Join(home, ".pyenv")
	for _, d := range []string{ws, state, filepath.Join(root, "shims")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	base, err := Base(nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Withhold(home, state)
	if err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(root, "shims", "python3")
	pol, err := For(base, w, ws, wire.Executable{Requested: shim, File: wire.FileIdentity{Path: shim}})
	if err != nil || !slices.Contains(pol.ReadExec, filepath.Join(root, "shims")) {
		t.Fatalf("For: %q, %v", pol.ReadExec, err)
	}
	got, err := WithToolchain(pol, w, ws, root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.ReadExec, root) || slices.Contains(got.ReadExec, filepath.Join(root, "shims")) {
		t.Errorf("read paths %q: want %s and not its shims/", got.ReadExec, root)
	}
	if _, ok := got.Pin(root); !ok {
		t.Errorf("%s is not pinned", root)
	}
	if _, ok := got.Pin(filepath.Join(root, "shims")); ok {
		t.Errorf("the dropped shims/ keeps its pin")
	}
	if slices.Contains(got.ReadWrite, root) || !slices.Contains(pol.ReadExec, filepath.Join(root, "shims")) {
		t.Errorf("read-write %q, or the policy passed in changed: %q", got.ReadWrite, pol.ReadExec)
	}
	if same, err := WithToolchain(base, w, ws, "/usr/lib"); err != nil || !slices.Equal(same.ReadExec, base.ReadExec) {
		t.Errorf("a root under /usr: %q, %v; want the base unchanged", same.ReadExec, err)
	}
	for name, r := range map[string]string{
		"the home directory":         home,
		"above the state directory":  filepath.Join(home, ".local"),
		"inside the state directory": filepath.Join(state, "caches"),
		"the filesystem root":        "/",
		"a parent of the home":       dir,
	} {
		if err := os.MkdirAll(r, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := WithToolchain(base, w, ws, r); err == nil {
			t.Errorf("%s (%s) was granted", name, r)
		}
	}
	excl := base
	excl.Excluded = []string{filepath.Join(root, "secret")}
	if _, err := WithToolchain(excl, w, ws, root); err == nil || !strings.Contains(err.Error(), "withheld") {
		t.Errorf("a root holding what /etc withholds: %v", err)
	}
}
