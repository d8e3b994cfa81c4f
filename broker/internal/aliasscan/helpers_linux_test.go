package aliasscan

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openRoot opens dir as the broker hands it over: O_PATH, without
// following a symlink.
func openRoot(t testing.TB, dir string) *os.File {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), dir)
	t.Cleanup(func() { f.Close() })
	return f
}

// scan scans dir, with the directories scope beside it, with a generous
// deadline.
func scan(t testing.TB, dir string, scope ...string) (*Result, error) {
	t.Helper()
	var fs []*os.File
	for _, d := range scope {
		fs = append(fs, openRoot(t, d))
	}
	return Scan(openRoot(t, dir), farDeadline(), fs...)
}

// mustScan scans dir (and scope) and requires it to finish.
func mustScan(t testing.TB, dir string, scope ...string) *Result {
	t.Helper()
	res, err := scan(t, dir, scope...)
	if err != nil {
		t.Fatalf("scan %s: %v", dir, err)
	}
	return res
}

// write creates the file rel beneath dir (and its parents) holding s.
func write(t testing.TB, dir, rel, s string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// link makes newname a hard link to oldname.
func link(t testing.TB, oldname, newname string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(newname), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(oldname, newname); err != nil {
		t.Fatal(err)
	}
}

// withLimits sets the scan's bounds for one test.
func withLimits(t *testing.T, entries, depth int, d time.Duration) {
	t.Helper()
	e, dp, du := maxEntries, maxDepth, maxDuration
	maxEntries, maxDepth, maxDuration = entries, depth, d
	t.Cleanup(func() { maxEntries, maxDepth, maxDuration = e, dp, du })
}

// farDeadline is a deadline no test scan reaches.
func farDeadline() time.Time { return time.Now().Add(time.Hour) }

// watchdog fires when a scan that should return at once has blocked: a
// bound against a hung test, not a timing assertion.
func watchdog() <-chan time.Time { return time.After(time.Minute) }
