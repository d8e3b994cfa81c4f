package protect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// opened counts, while the test runs, the locations opened to read.
func opened(t *testing.T) map[string]int {
	t.Helper()
	n := map[string]int{}
	onOpen = func(loc string) { n[loc]++ }
	t.Cleanup(func() { onOpen = nil })
	return n
}

// takeWithin takes a snapshot of ws, failing the test when that takes
// longer than d.
func takeWithin(t *testing.T, ws string, d time.Duration) *Snapshot {
	t.Helper()
	done := make(chan *Snapshot, 1)
	go func() { done <- Take(open(t, ws)) }()
	select {
	case s := <-done:
		return s
	case <-time.After(d):
		t.Fatalf("the snapshot took longer than %v", d)
		return nil
	}
}

// TestSelfIncludingConfigIsReadOnce: review F1. A config including
// itself 8 times would be read 8^10 times if each include were read
// anew; it is read once, and what it sets is unchecked (git itself
// stops at its include depth).
func TestSelfIncludingConfigIsReadOnce(t *testing.T) {
	ws := t.TempDir()
	cfg := "[include]\n" + strings.Repeat("\tpath = config\n", 8)
	mkGitdir(t, filepath.Join(ws, "sub", ".git"), cfg)
	n := opened(t)
	s := takeWithin(t, ws, 20*time.Second)
	defer s.Release()
	if n["sub/.git/config"] > 2 { // parsed once, digested once
		t.Errorf("sub/.git/config opened %d times, want at most 2", n["sub/.git/config"])
	}
	if got := s.entries["sub/.git/config"+hooksPath]; got != Unchecked {
		t.Errorf("the self-including config's hooksPath is %q, want %q", got, Unchecked)
	}
	// Planted during a run, it is listed and the check after it ends.
	ws2 := t.TempDir()
	mkGitdir(t, filepath.Join(ws2, ".git"), "")
	got := changesOf(t, ws2, func() { mkGitdir(t, filepath.Join(ws2, "sub", ".git"), cfg) })
	wantListed(t, got, "sub/.git/config (core.hooksPath)", Absent, Unchecked)
}

// TestConfigFilesAreBounded: past the bound on config files parsed a
// snapshot, what the config sets is unchecked and the bound is listed.
func TestConfigFilesAreBounded(t *testing.T) {
	ws := t.TempDir()
	cfg := "[include]\n"
	for i := range 10 {
		name := "inc" + string(rune('a'+i))
		write(t, filepath.Join(ws, name), "[core]\n\tbare = false\n", 0o644)
		cfg += "\tpath = ../" + name + "\n"
	}
	mkGitdir(t, filepath.Join(ws, ".git"), cfg)
	defer func(n int) { maxConfigFiles = n }(maxConfigFiles)
	maxConfigFiles = 4
	s := Take(open(t, ws))
	defer s.Release()
	if s.entries[ScanBound] != Unchecked || s.entries[".git/config"+hooksPath] != Unchecked {
		t.Errorf("past the config bound: %q, %q", s.entries[ScanBound], s.entries[".git/config"+hooksPath])
	}
}

// TestOutsideContentsAreNeverEchoed: review F2. An include, a gitfile's
// gitdir and its commondir naming files outside the workspace (where the
// target may not read) are recorded by stat; nothing of their contents
// appears in any state, before or after, nor in the listing.
func TestOutsideContentsAreNeverEchoed(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "f"), "[core]\n\thooksPath = TOPSECRET-VALUE\n", 0o600)
	mkGitdir(t, filepath.Join(outside, "g"), "[core]\n\thooksPath = TOPSECRET-HOOKS\n")
	write(t, filepath.Join(outside, "g", "commondir"), "../TOPSECRET-COMMON\n", 0o600)
	mkGitdir(t, filepath.Join(ws, ".git"), "")
	n := opened(t)
	before := Take(open(t, ws))
	write(t, filepath.Join(ws, ".git", "config"), "[include]\n\tpath = "+filepath.Join(outside, "f")+"\n", 0o644)
	write(t, filepath.Join(ws, "wt", ".git"), "gitdir: "+filepath.Join(outside, "g")+"\n", 0o644)
	after := before.Again()
	for _, s := range []*Snapshot{before, after} {
		for k, v := range s.entries {
			if strings.Contains(k+v, "TOPSECRET") {
				t.Errorf("an outside file's contents are echoed: %s = %s", k, v)
			}
		}
	}
	got := map[string]bool{}
	for _, c := range Diff(before, after) {
		got[c.Path] = true
		if strings.Contains(c.Path+c.Before+c.After, "TOPSECRET") {
			t.Errorf("listed: %+v", c)
		}
	}
	for loc := range n {
		if strings.HasPrefix(loc, outside) && !strings.HasSuffix(loc, "/hooks") && !strings.HasSuffix(loc, "/info") {
			t.Errorf("%s outside the workspace was opened to read", loc)
		}
	}
	if v := after.entries[filepath.Join(outside, "f")]; !strings.HasPrefix(v, "file size:") {
		t.Errorf("the outside include is recorded as %q, want its stat", v)
	}
	if v := after.entries[".git/config"+hooksPath]; v != Unchecked {
		t.Errorf("what the outside include sets is %q, want %q", v, Unchecked)
	}
	if !got[".git/config"] || !got["wt/.git (resolves to)"] {
		t.Errorf("the redirections outside are not listed: %v", got)
	}
}

// TestIncludedDeviceIsNeverOpened: review F2. include.path naming a
// character device is recorded by its type; the device is never opened
// to read (its driver's open would run as the broker).
func TestIncludedDeviceIsNeverOpened(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[include]\n\tpath = /dev/null\n")
	must(t, os.Symlink("/dev/null", filepath.Join(ws, "null")))
	mkGitdir(t, filepath.Join(ws, "sub", ".git"), "[include]\n\tpath = ../../null\n")
	n := opened(t)
	s := Take(open(t, ws))
	defer s.Release()
	if n["/dev/null"] != 0 {
		t.Errorf("/dev/null was opened to read %d times", n["/dev/null"])
	}
	if v := s.entries["/dev/null"]; !strings.HasPrefix(v, "type:") {
		t.Errorf("/dev/null is recorded as %q, want its type", v)
	}
}

// TestConfigWorktreeNeedsTheExtension: git reads config.worktree only
// when the common config sets extensions.worktreeConfig.
func TestConfigWorktreeNeedsTheExtension(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n")
	write(t, filepath.Join(ws, ".git", "config.worktree"), "[core]\n\thooksPath = wthooks\n", 0o644)
	s := Take(open(t, ws))
	s.Release()
	if v := s.entries[".git/config"+hooksPath]; v != Absent {
		t.Errorf("without the extension, config.worktree sets hooksPath %q", v)
	}
	write(t, filepath.Join(ws, ".git", "config"), "[extensions]\n\tworktreeConfig = true\n", 0o644)
	s = Take(open(t, ws))
	s.Release()
	if v := s.entries[".git/config"+hooksPath]; v != `"wthooks"` {
		t.Errorf("with the extension, hooksPath is %q, want %q", v, `"wthooks"`)
	}
}
