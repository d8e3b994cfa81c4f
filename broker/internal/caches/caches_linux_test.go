package caches

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/wire"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newStore(t *testing.T, cargo bool) *Store {
	t.Helper()
	root := filepath.Join(t.TempDir(), "caches")
	must(t, os.Mkdir(root, 0o700))
	clock := time.Unix(1_700_000_000, 0)
	s, err := Open(root, cargo, func() time.Time { clock = clock.Add(time.Second); return clock })
	must(t, err)
	return s
}

func env(c *Cache) map[string]string {
	m := map[string]string{}
	for _, kv := range c.Env {
		m[kv.Name] = kv.Value
	}
	return m
}

// TestCacheIsPerWorkspaceIdentity: one workspace identity gets one cache
// whatever its path (the key is dev, ino and birth time), reused with
// the same directory; another identity, or the same (dev, ino) born
// again, gets another. Every directory is 0700, the standard variables
// point into subdirectories of data/, CARGO_TARGET_DIR only when asked.
func TestCacheIsPerWorkspaceIdentity(t *testing.T) {
	s := newStore(t, false)
	a := wire.DirIdentity{Path: "/w/a", Dev: 1, Ino: 2, BirthNs: 3}
	c1, err := s.For(a)
	must(t, err)
	moved := a
	moved.Path = "/elsewhere"
	c2, err := s.For(moved)
	must(t, err)
	if c1.Dir != c2.Dir || c1.Dir != s.Dir(a) || filepath.Base(c1.Dir) != "data" {
		t.Fatalf("the same workspace got %s and %s", c1.Dir, c2.Dir)
	}
	reborn := a
	reborn.BirthNs = 4
	other := wire.DirIdentity{Path: "/w/b", Dev: 1, Ino: 5}
	for _, ws := range []wire.DirIdentity{reborn, other} {
		c, err := s.For(ws)
		must(t, err)
		if c.Dir == c1.Dir {
			t.Fatalf("%+v shares %+v's cache", ws, a)
		}
	}
	e := env(c1)
	for _, v := range Standard {
		if e[v.Name] != filepath.Join(c1.Dir, v.Sub) {
			t.Errorf("%s=%q, want %s", v.Name, e[v.Name], filepath.Join(c1.Dir, v.Sub))
		}
		fi, err := os.Lstat(e[v.Name])
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", e[v.Name], fi.Mode(), err)
		}
	}
	if _, ok := e["CARGO_TARGET_DIR"]; ok || len(c1.Env) != len(Standard)+len(Fixed) {
		t.Errorf("variables %v", e)
	}
	for _, d := range []string{c1.Dir, filepath.Dir(c1.Dir)} {
		if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, fi.Mode(), err)
		}
	}
	cargo := newStore(t, true)
	c, err := cargo.For(a)
	must(t, err)
	if env(c)["CARGO_TARGET_DIR"] != filepath.Join(c.Dir, "cargo-target") {
		t.Errorf("asked for, CARGO_TARGET_DIR is %q", env(c)["CARGO_TARGET_DIR"])
	}
}

// TestCacheListRecordsUse: List names every cache with the workspace's
// path as last used, the last use, and the size of its regular files
// (a symlink to a big file outside counts as nothing); oldest use first.
func TestCacheListRecordsUse(t *testing.T) {
	s := newStore(t, false)
	a := wire.DirIdentity{Path: "/w/a", Dev: 1, Ino: 2}
	b := wire.DirIdentity{Path: "/w/b", Dev: 1, Ino: 3}
	ca, err := s.For(a)
	must(t, err)
	_, err = s.For(b)
	must(t, err)
	a.Path = "/w/a-renamed"
	_, err = s.For(a) // a used last, under its new path
	must(t, err)
	must(t, os.WriteFile(filepath.Join(ca.Dir, "go-build", "f"), make([]byte, 1000), 0o600))
	must(t, os.Symlink("/usr/bin/env", filepath.Join(ca.Dir, "go-build", "link")))
	list, err := List(s.Root())
	must(t, err)
	if len(list) != 2 || list[0].Workspace != "/w/b" || list[1].Workspace != "/w/a-renamed" || !list[0].LastUse.Before(list[1].LastUse) {
		t.Fatalf("list %+v", list)
	}
	if got := list[1]; got.Bytes != 1000 || got.Files != 1 || got.Dir != ca.Dir || got.Key != Key(a) || got.Problem != "" {
		t.Fatalf("a's cache: %+v", got)
	}
	none, err := List(filepath.Join(t.TempDir(), "absent"))
	if err != nil || len(none) != 0 {
		t.Fatalf("an absent caches directory lists %v, %v", none, err)
	}
}

// TestCacheRemoveByDescriptor: Remove empties a cache the target made
// awkward — a read-only module-cache tree, a directory with no
// permissions at all, a symlink to a file and one to a directory
// outside — without following any link: what they point at survives.
func TestCacheRemoveByDescriptor(t *testing.T) {
	s := newStore(t, false)
	ws := wire.DirIdentity{Path: "/w", Dev: 9, Ino: 9}
	c, err := s.For(ws)
	must(t, err)
	outside := t.TempDir()
	before, err := os.Stat(outside)
	must(t, err)
	victim := filepath.Join(outside, "victim")
	must(t, os.WriteFile(victim, []byte("keep"), 0o600))
	mod := filepath.Join(c.Dir, "go-mod", "example.com", "m@v1.0.0")
	must(t, os.MkdirAll(mod, 0o755))
	must(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module m\n"), 0o444))
	must(t, os.Symlink(victim, filepath.Join(mod, "to-file")))
	must(t, os.Symlink(outside, filepath.Join(mod, "to-dir")))
	for _, d := range []string{mod, filepath.Dir(mod)} {
		must(t, os.Chmod(d, 0o555))
	}
	locked := filepath.Join(c.Dir, "pip", "locked")
	must(t, os.MkdirAll(filepath.Join(locked, "inner"), 0o700))
	must(t, os.Chmod(locked, 0))
	must(t, Remove(s.Root(), Key(ws)))
	if _, err := os.Lstat(filepath.Dir(c.Dir)); !os.IsNotExist(err) {
		t.Fatalf("the cache is still there: %v", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Fatalf("a file a symlink in the cache pointed at: %q, %v", b, err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode() != before.Mode() {
		t.Fatalf("the directory a symlink pointed at changed: %v %v", fi.Mode(), err)
	}
	for _, k := range []string{"..", "x", strings.Repeat("A", 32)} {
		if err := Remove(s.Root(), k); err == nil {
			t.Errorf("Remove(%q) accepted a name that is no cache key", k)
		}
	}
}

// TestCacheSubdirectorySwappedForSymlink: a target that replaced a
// subdirectory by a symlink does not make For follow it or fail.
func TestCacheSubdirectorySwappedForSymlink(t *testing.T) {
	s := newStore(t, false)
	ws := wire.DirIdentity{Path: "/w", Dev: 7, Ino: 7}
	c, err := s.For(ws)
	must(t, err)
	outside := t.TempDir()
	gc := filepath.Join(c.Dir, "go-build")
	must(t, os.Remove(gc))
	must(t, os.Symlink(outside, gc))
	if _, err := s.For(ws); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(gc); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("go-build: %v %v", fi.Mode(), err)
	}
	if names, _ := os.ReadDir(outside); len(names) != 0 {
		t.Fatalf("For wrote through the symlink: %v", names)
	}
}

// The use record is rewritten when the workspace's path changed or a
// minute has passed since this Store wrote it, not at every action: its
// inode (each rewrite is a rename of a new file) shows which.
func TestCacheRecordIsRewrittenAtMostEveryMinute(t *testing.T) {
	s := newStore(t, false) // its clock advances a second at each use
	a := wire.DirIdentity{Path: "/w/a", Dev: 1, Ino: 2}
	c, err := s.For(a)
	must(t, err)
	rec := filepath.Join(filepath.Dir(c.Dir), "workspace")
	inode := func() uint64 {
		fi, err := os.Stat(rec)
		must(t, err)
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	first := inode()
	for range 10 {
		_, err = s.For(a)
		must(t, err)
	}
	if inode() != first {
		t.Fatal("the use record was rewritten within a minute, under the same path")
	}
	a.Path = "/w/a-renamed"
	_, err = s.For(a)
	must(t, err)
	renamed := inode()
	if renamed == first {
		t.Fatal("the use record kept the old path")
	}
	for range 60 {
		_, err = s.For(a)
		must(t, err)
	}
	if inode() == renamed {
		t.Fatal("the use record was not rewritten after a minute")
	}
}
