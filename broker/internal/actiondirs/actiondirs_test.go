package actiondirs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// names lists root's entries with prefix.
func names(t *testing.T, root, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestActionDirsSpareRenameAndBackgroundRemoval: a previous broker's
// spare and trash are removed and an action's kept; the spare made ahead
// becomes the next action's directory (the same inode), 0700 with home
// and tmp; removal takes the handle's name away before it returns, and
// only the call it returns deletes the set (without following a symlink
// the target planted) and makes the next spare; close leaves no spare and
// no trash.
func TestActionDirsSpareRenameAndBackgroundRemoval(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"spare-old", "trash-old", "a-unknown"} {
		if err := os.MkdirAll(filepath.Join(root, n, "home"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d := Open(root, t.Logf)
	d.spare.Wait() // the leftovers' removal and the first spare
	if got := names(t, root, "trash-"); len(got) != 0 {
		t.Fatalf("a previous broker's trash is left: %v", got)
	}
	spares := names(t, root, sparePrefix)
	if len(spares) != 1 || spares[0] == "spare-old" {
		t.Fatalf("spares %v, want one new one", spares)
	}
	if _, err := os.Stat(filepath.Join(root, "a-unknown")); err != nil {
		t.Fatalf("an action's directories were removed: %v", err)
	}
	ino := inode(t, filepath.Join(root, spares[0]))

	home, tmp, err := d.Make("a-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := inode(t, filepath.Join(root, "a-1")); got != ino {
		t.Fatalf("the action's directory is inode %d, not the spare's %d", got, ino)
	}
	for _, p := range []string{filepath.Dir(home), home, tmp} {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want a 0700 directory", p, fi, err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(tmp, "dirlink")); err != nil {
		t.Fatal(err)
	}
	later, err := d.Remove("a-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "a-1")); !os.IsNotExist(err) {
		t.Fatalf("the handle still names its directories after remove: %v", err)
	}
	d.spare.Wait()
	if tr, sp := names(t, root, "trash-"), names(t, root, sparePrefix); len(tr) != 1 || len(sp) != 0 {
		t.Fatalf("before the ended action's background work is started: trash %v, spares %v; want one trash, no spare", tr, sp)
	}
	later()
	d.spare.Wait()
	if tr, sp := names(t, root, "trash-"), names(t, root, sparePrefix); len(tr) != 0 || len(sp) != 1 {
		t.Fatalf("after it: trash %v, spares %v; want no trash, one spare", tr, sp)
	}
	if _, err := d.Remove("a-never"); err != nil {
		t.Fatalf("removing what is not there: %v", err)
	}
	d.Close()
	if got := append(names(t, root, "trash-"), names(t, root, sparePrefix)...); len(got) != 0 {
		t.Fatalf("after close: %v", got)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Fatalf("the file a planted symlink named: %q %v", b, err)
	}
}
