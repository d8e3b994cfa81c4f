package rmtree

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBeneathWhateverModes: Beneath removes a tree whose directories are
// mode 0 and read-only, with symlinks to a file and a directory outside,
// without following them: what they point at survives. (Its point shows
// under a uid other than root, which modes bind; the integration test
// TestBrokerTrashRemovedWhateverModesAsUser runs one as uid 65534.)
func TestBeneathWhateverModes(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	must(t, os.WriteFile(victim, []byte("keep"), 0o600))
	deep := filepath.Join(root, "trash", "a", "b", "c")
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(deep, "blob"), make([]byte, 1<<20), 0o400))
	must(t, os.Symlink(victim, filepath.Join(deep, "to-file")))
	must(t, os.Symlink(outside, filepath.Join(deep, "to-dir")))
	must(t, os.Chmod(deep, 0))
	must(t, os.Chmod(filepath.Dir(deep), 0))
	must(t, os.Chmod(filepath.Join(root, "trash", "a"), 0o500))
	must(t, Beneath(root, "trash"))
	if _, err := os.Lstat(filepath.Join(root, "trash")); !os.IsNotExist(err) {
		t.Fatalf("the tree is still there: %v", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Fatalf("the file a symlink pointed at: %q, %v", b, err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("the directory a symlink pointed at: %v", err)
	}
}

// TestBeneathDeeperThanItsDescriptors: a tree twice as deep as
// MaxDepth, with a mode-0 directory deep down, is removed all the same
// (its deep parts moved up and removed in later passes).
func TestBeneathDeeperThanItsDescriptors(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "trash")
	must(t, os.Mkdir(p, 0o700))
	// Made by descriptor: the path would pass PATH_MAX.
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	for i := range 2*MaxDepth + 5 {
		must(t, unix.Mkdirat(fd, "d", 0o700))
		if i == MaxDepth+2 {
			must(t, unix.Mknodat(fd, "f", unix.S_IFREG|0o600, 0))
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(t, err)
		if i == MaxDepth+3 {
			must(t, unix.Fchmod(fd, 0))
		}
		unix.Close(fd)
		fd = next
	}
	unix.Close(fd)
	must(t, Beneath(root, "trash"))
	if left, err := os.ReadDir(root); err != nil || len(left) != 0 {
		t.Fatalf("left: %v %v", left, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
