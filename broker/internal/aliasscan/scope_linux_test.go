package aliasscan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The writable scope is the tree and the directories given beside it (a
// workspace's cache): a file whose names all lie in the scope passes, as
// uv's links from its cache into .venv must; a file with one more name
// anywhere else is aliased, and so is a link to a file in a directory
// outside the scope (another workspace's cache).
func TestScanScopeCountsNamesInTheCache(t *testing.T) {
	base := t.TempDir()
	root, cache, other := filepath.Join(base, "ws"), filepath.Join(base, "cache"), filepath.Join(base, "other")
	pkg := write(t, cache, "uv/archive/pkg.py", "p")
	link(t, pkg, filepath.Join(root, ".venv/pkg.py"))
	link(t, pkg, filepath.Join(root, ".venv/again.py")) // two names inside, one in the cache
	write(t, cache, "go-build/unrelated", "u")
	res := mustScan(t, root, cache)
	if len(res.Aliased) != 0 || res.Files != 2 {
		t.Fatalf("links from the cache: %+v, want none aliased", res)
	}
	if res := mustScan(t, root); !slices.Equal(res.Aliased, []string{".venv/again.py", ".venv/pkg.py"}) {
		t.Fatalf("the tree alone: aliased = %q", res.Aliased)
	}

	third := write(t, cache, "uv/archive/third.py", "t")
	link(t, third, filepath.Join(root, ".venv/third.py"))
	link(t, third, filepath.Join(base, "elsewhere")) // a third name, outside the scope
	foreign := write(t, other, "uv/foreign.py", "f")
	link(t, foreign, filepath.Join(root, "foreign.py"))
	res = mustScan(t, root, cache)
	if want := []string{".venv/third.py", "foreign.py"}; !slices.Equal(res.Aliased, want) {
		t.Fatalf("aliased = %q, want %q", res.Aliased, want)
	}
	// Every directory of the scope counts.
	if res := mustScan(t, root, cache, other); !slices.Equal(res.Aliased, []string{".venv/third.py"}) {
		t.Fatalf("with both directories: aliased = %q", res.Aliased)
	}
	_, err := Check(openRoot(t, root), openRoot(t, cache))
	requireRefusal(t, err, `2 files in the workspace are hard links to files with a name outside it`)
}

// The scope's other directories are scanned only when the tree has a file
// with names it does not hold, within the same bounds, and then in full:
// over a bound, or holding a mount point, the check is refused (never
// passed half-checked); with nothing to account for they are not read.
func TestScanScopeBounds(t *testing.T) {
	base := t.TempDir()
	root, cache := filepath.Join(base, "ws"), filepath.Join(base, "cache")
	write(t, root, "plain", "x")
	for i := range 12 {
		write(t, cache, fmt.Sprintf("d/%d", i), "c")
	}
	withLimits(t, 10, 3, MaxDuration)
	if res := mustScan(t, root, cache); res.Entries != 1 {
		t.Fatalf("nothing to account for, yet the cache was read: %+v", res)
	}
	link(t, filepath.Join(cache, "d/0"), filepath.Join(root, "linked"))
	res, err := scan(t, root, cache)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != LimitEntries || res != nil {
		t.Fatalf("cache over the entry limit: %+v, %v", res, err)
	}
	_, err = Check(openRoot(t, root), openRoot(t, cache))
	requireRefusal(t, err, "could not be checked")
	requireRefusal(t, err, "more than 10 entries")

	for i := 1; i < 12; i++ {
		if err := os.Remove(filepath.Join(cache, fmt.Sprintf("d/%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if res := mustScan(t, root, cache); len(res.Aliased) != 0 {
		t.Fatalf("within the bounds: aliased = %q", res.Aliased)
	}
	t.Run("a mount point in the cache", func(t *testing.T) {
		bindMount(t, filepath.Join(base, "ws"), filepath.Join(cache, "mnt"))
		_, err := Check(openRoot(t, root), openRoot(t, cache))
		requireRefusal(t, err, `"mnt" in the workspace's cache is a mount point`)
	})
}

// A scope directory that holds the tree, lies in it or is it would count
// the tree's names twice: the scan fails rather than pass an alias.
func TestScanScopeMustNotOverlapTheTree(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := write(t, t.TempDir(), "outside", "x") // not beneath base: base holds only ws
	link(t, outside, filepath.Join(root, "planted"))
	write(t, root, "cache/f", "c")
	for _, dir := range []string{root, base, filepath.Join(root, "cache")} {
		res, err := scan(t, root, dir)
		var se *ScopeError
		if !errors.As(err, &se) || !errors.Is(err, errOverlap) || res != nil {
			t.Errorf("scope %s: %+v, %v; want the overlap refused", dir, res, err)
		}
	}
}
