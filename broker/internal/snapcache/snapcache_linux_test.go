package snapcache

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/internal/fsid"
)

// TestChangedSnapshotIsNotHandedOutAgain: a change to one action's copy of
// a cached snapshot (fchmod 0 of it) changes the shared inode. Targets
// are refused that change (broker/internal/metadata), but should one
// happen, the next Get must not hand that snapshot out, but a fresh one
// with the original mode.
func TestChangedSnapshotIsNotHandedOutAgain(t *testing.T) {
	src := filepath.Join(t.TempDir(), "tool")
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, b, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := fsid.File(int(f.Fd()), src)
	if err != nil {
		t.Fatal(err)
	}
	c := New(4, 1<<30)
	defer c.Close()
	first, err := c.Get(f, id)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(first.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	mode := st.Mode
	if err := unix.Fchmod(int(first.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	first.Close()
	again, err := c.Get(f, id)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := unix.Fstat(int(again.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode != mode {
		t.Fatalf("the second action got a snapshot of mode %o, want the original %o", st.Mode, mode)
	}
	if c.lru.Len() != 1 {
		t.Fatalf("the cache holds %d snapshots, want the fresh one alone", c.lru.Len())
	}
}
