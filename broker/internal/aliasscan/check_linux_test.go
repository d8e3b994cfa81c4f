package aliasscan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// The bounds are exact: a real tree at the entry and depth limits
// passes, one more entry or level fails with a *LimitError naming that
// limit, and Check refuses it with WORKSPACE_ALIASED and the limit in the
// sentence, with no result.
func TestScanLimits(t *testing.T) {
	withLimits(t, 10, 3, MaxDuration)
	t.Run("entries", func(t *testing.T) {
		root := t.TempDir()
		for i := range 5 {
			write(t, root, fmt.Sprintf("d/%d", i), "x") // d + 5 names
		}
		for i := range 4 {
			write(t, root, fmt.Sprintf("%d", i), "x")
		}
		if res := mustScan(t, root); res.Entries != 10 {
			t.Fatalf("entries = %d, want 10", res.Entries)
		}
		write(t, root, "d/one-more", "x")
		requireLimit(t, root, LimitEntries, "more than 10 entries")
	})
	t.Run("entries in one directory", func(t *testing.T) {
		withLimits(t, 2*listBatch, 3, MaxDuration) // across several reads of one directory
		root := t.TempDir()
		for i := range 2*listBatch + 1 {
			write(t, root, fmt.Sprintf("%d", i), "")
		}
		requireLimit(t, root, LimitEntries, "more than 2,048 entries")
	})
	t.Run("depth", func(t *testing.T) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "1/2/3"), 0o755); err != nil {
			t.Fatal(err)
		}
		if res := mustScan(t, root); res.Dirs != 4 {
			t.Fatalf("dirs = %d, want 4", res.Dirs)
		}
		if err := os.Mkdir(filepath.Join(root, "1/2/3/4"), 0o755); err != nil {
			t.Fatal(err)
		}
		requireLimit(t, root, LimitDepth, "more than 3 directories deep")
	})
	t.Run("duration", func(t *testing.T) {
		root := t.TempDir()
		write(t, root, "f", "x")
		res, err := Scan(openRoot(t, root), time.Now().Add(-time.Second))
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != LimitDuration || res != nil {
			t.Fatalf("scan past its deadline = %+v, %v; want a duration limit", res, err)
		}
		withLimits(t, 10, 3, 0) // Check's own budget, spent at once
		_, err = Check(openRoot(t, root))
		requireRefusal(t, err, "did not finish within 0s")
	})
}

func requireLimit(t *testing.T, root string, l Limit, sentence string) {
	t.Helper()
	res, err := scan(t, root)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != l || res != nil {
		t.Fatalf("scan = %+v, %v; want limit %d", res, err, l)
	}
	res, err = Check(openRoot(t, root))
	if res != nil {
		t.Fatalf("Check answered a result over the limit: %+v", res)
	}
	requireRefusal(t, err, sentence)
}

// requireRefusal requires err to be a WORKSPACE_ALIASED *wire.Error
// whose sentence contains want and fits the wire.
func requireRefusal(t *testing.T, err error, want string) *wire.Error {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeWorkspaceAliased {
		t.Fatalf("refusal = %v, want WORKSPACE_ALIASED", err)
	}
	if !strings.Contains(we.Message, want) {
		t.Fatalf("sentence %q does not say %q", we.Message, want)
	}
	if _, err := wire.Encode(we); err != nil {
		t.Fatalf("the refusal does not fit the wire: %v", err)
	}
	return we
}

// Check names at most MaxNamed aliased names, sorted and relative to the
// workspace, with the total; long and unprintable names are quoted and
// cut so that the sentence still fits the wire.
func TestCheckSentence(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := write(t, base, "outside", "x")
	long := strings.Repeat("n", 250)
	for i := range 12 {
		link(t, outside, filepath.Join(root, fmt.Sprintf("d%02d", i), long))
	}
	link(t, outside, filepath.Join(root, "z\nnewline\x01"))
	res, err := Check(openRoot(t, root))
	if res != nil {
		t.Fatalf("Check passed an aliased workspace: %+v", res)
	}
	we := requireRefusal(t, err, "13 files in the workspace are hard links to files with a name outside it")
	if !strings.Contains(we.Message, `"d00/`+long[:maxShown-4]) || !strings.Contains(we.Message, "d09/") ||
		strings.Contains(we.Message, "d10/") || !strings.Contains(we.Message, " and 3 more;") {
		t.Fatalf("sentence %q does not name the first 10 sorted names and 3 more", we.Message)
	}
	if strings.Contains(we.Message, base) {
		t.Fatalf("sentence %q names an absolute path", we.Message)
	}

	one := filepath.Join(base, "one")
	link(t, outside, filepath.Join(one, "bad\nname"))
	_, err = Check(openRoot(t, one))
	requireRefusal(t, err, `1 file in the workspace is a hard link to a file with a name outside it, which the sandbox would write through: "bad\nname"`)

	clean := filepath.Join(base, "clean")
	write(t, clean, "f", "x")
	if res, err := Check(openRoot(t, clean)); err != nil || res.Files != 1 {
		t.Fatalf("Check of a clean workspace = %+v, %v", res, err)
	}
}

// A scan that fails for another reason than a limit is refused with the
// failure, never passed.
func TestCheckRefusesAChangedTree(t *testing.T) {
	_, err := Check(openRoot(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	f := openRoot(t, root)
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	_, err = Check(f)
	requireRefusal(t, err, "could not be checked for hard links")
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 250000: "250,000", 1234567: "1,234,567"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}
