package actiondirs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestActionDirsUnremovedRecordedAndRetried: a trash directory whose
// removal fails (here it holds a mount point, which even root cannot
// remove) is recorded beside it with the error and listed by
// ReadUnremoved; the next Open tries again, and once it succeeds the
// record is gone and nothing is listed. A record whose entry was removed
// by hand is dropped at Open.
func TestActionDirsUnremovedRecordedAndRetried(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: needs root to plant a mount point that stops the removal")
	}
	root := t.TempDir()
	trash := filepath.Join(root, "trash-busy")
	mnt := filepath.Join(trash, "home", "mnt")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("skip: cannot mount a tmpfs here: %v", err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	if err := os.WriteFile(filepath.Join(root, unremovedPrefix+"trash-gone"), []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	Open(root, t.Logf).Close()
	got, err := ReadUnremoved(root)
	if err != nil || len(got) != 1 || got[0].Path != trash || !strings.Contains(got[0].Error, "busy") {
		t.Fatalf("ReadUnremoved: %+v %v; want %s with the error", got, err, trash)
	}
	if _, err := os.Lstat(filepath.Join(root, unremovedPrefix+"trash-gone")); !os.IsNotExist(err) {
		t.Fatalf("the record of an entry removed by hand is kept: %v", err)
	}

	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatal(err)
	}
	mounted = false
	Open(root, t.Logf).Close()
	if got, err := ReadUnremoved(root); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("after the retry: %+v %v, want an empty list", got, err)
	}
	if left := names(t, root, ""); len(left) != 0 {
		t.Fatalf("after the retry the actions directory holds %v", left)
	}
}
