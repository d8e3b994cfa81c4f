package protect

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, dir string) *os.File {
	t.Helper()
	f, err := os.Open(dir)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// TestSnapshotSeesEveryKindOfChange: a created hook, a mode change, an
// edited config, a deleted .envrc and a new file in an editor directory
// are each listed; an unchanged entry is not.
func TestSnapshotSeesEveryKindOfChange(t *testing.T) {
	ws := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".git", "hooks", "old.sample"), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".envrc"), []byte("export A=1\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".gitmodules"), []byte(""), 0o644))
	before := Take(open(t, ws))
	must(t, os.WriteFile(filepath.Join(ws, ".git", "hooks", "pre-commit"), []byte("evil"), 0o755))
	must(t, os.Chmod(filepath.Join(ws, ".git", "hooks", "old.sample"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\nfsmonitor=evil\n"), 0o644))
	must(t, os.Remove(filepath.Join(ws, ".envrc")))
	must(t, os.WriteFile(filepath.Join(ws, ".vscode", "tasks.json"), []byte("{}"), 0o644))
	got := map[string]bool{}
	for _, c := range Diff(before, before.Again()) {
		got[c.Path] = true
	}
	for _, want := range []string{".git/hooks/pre-commit", ".git/hooks/old.sample", ".git/config", ".envrc", ".vscode/tasks.json"} {
		if !got[want] {
			t.Errorf("%s changed and is not listed (listed: %v)", want, got)
		}
	}
	if got[".gitmodules"] || len(got) != 5 {
		t.Errorf("listed %v, want the five changes alone", got)
	}
}

// TestSnapshotFollowsNothing: nothing is opened through a symlink: a
// symlink is recorded as one, where a .git symlink resolves is recorded
// by its own path (outside the workspace here), a symlink outside from
// anything but git is not followed, and a FIFO is recorded without being
// opened.
func TestSnapshotFollowsNothing(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(outside, "hooks"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(ws, ".git")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(ws, ".envrc")))
	must(t, os.Mkdir(filepath.Join(ws, ".idea"), 0o755))
	must(t, syscall.Mkfifo(filepath.Join(ws, ".idea", "fifo"), 0o644))
	s := Take(open(t, ws))
	defer s.Release()
	if v := s.entries[".git"]; !strings.HasPrefix(v, "symlink:") {
		t.Errorf(".git, a symlink: %q", v)
	}
	if v := s.entries[outside+"/hooks"]; !strings.HasPrefix(v, "dir mtime:") {
		t.Errorf("the hooks of the gitdir .git resolves to: %q", v)
	}
	if _, ok := s.entries[".git/hooks"]; ok {
		t.Errorf(".git/hooks was recorded through the symlink")
	}
	if v := s.entries[".envrc"]; len(v) < 8 || v[:8] != "symlink:" {
		t.Errorf(".envrc, a symlink: %q", v)
	}
	if v, ok := s.entries["/etc/passwd"]; ok {
		t.Errorf("a symlink outside from .envrc was followed: %q", v)
	}
	if v := s.entries[".idea/fifo"]; len(v) < 5 || v[:5] != "type:" {
		t.Errorf("a FIFO: %q", v)
	}
}

// TestLinkedWorktreeGitdirIsProtected: a worktree whose .git file names a
// gitdir has that gitdir's hooks and config watched, inside the
// workspace by its relative path, outside it by its absolute one.
func TestLinkedWorktreeGitdirIsProtected(t *testing.T) {
	ws := t.TempDir()
	gd := filepath.Join(ws, "main", ".git", "worktrees", "wt")
	must(t, os.MkdirAll(filepath.Join(gd, "hooks"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "wt"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "wt", ".git"), []byte("gitdir: "+gd+"\n"), 0o644))
	wt := filepath.Join(ws, "wt")
	// The worktree is the workspace; its gitdir lies outside it.
	s := Take(open(t, wt))
	s.Release()
	if v := s.entries[gd+"/hooks"]; !strings.HasPrefix(v, "dir mtime:") {
		t.Errorf("the gitdir outside the workspace: hooks %q", v)
	}
	if v := s.entries[".git"+resolvesTo]; v != strconv.Quote(gd)+outsideWS {
		t.Errorf("where .git resolves: %q", v)
	}
	// The workspace holds both: the gitdir is watched.
	must(t, os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: main/.git/worktrees/wt\n"), 0o644))
	before := Take(open(t, ws))
	must(t, os.WriteFile(filepath.Join(gd, "hooks", "post-checkout"), []byte("evil"), 0o755))
	changes := Diff(before, before.Again())
	if len(changes) != 1 || changes[0].Path != "main/.git/worktrees/wt/hooks/post-checkout" {
		t.Fatalf("changes %+v, want the gitdir's new hook", changes)
	}
}

// TestHashFileNeverWaitsOnAFIFO: a regular file swapped for a FIFO, whose
// writer holds it open and writes nothing, between the O_PATH stat and the
// read is left unchecked instead of blocking the broker (found in review).
// A regular file opened is hashed only if it is the inode that was stat'd.
func TestHashFileNeverWaitsOnAFIFO(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, ".envrc")
	must(t, os.WriteFile(p, []byte("export A=1\n"), 0o644))
	var st syscall.Stat_t
	must(t, syscall.Stat(p, &st))
	must(t, os.Remove(p))
	must(t, syscall.Mkfifo(p, 0o644))
	w, err := os.OpenFile(p, os.O_RDWR, 0) // a writer that never writes
	must(t, err)
	defer w.Close()
	root := open(t, ws)
	s := &Snapshot{fd: int(root.Fd()), entries: map[string]string{}}
	done := make(chan string, 1)
	go func() { done <- s.hashFile(".envrc", st.Dev, st.Ino, st.Size, "mode:0644") }()
	select {
	case got := <-done:
		if got != Unchecked {
			t.Fatalf("a FIFO in a regular file's place gave %q, want %q", got, Unchecked)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hashFile blocked on a FIFO swapped in after the stat")
	}

	must(t, os.Remove(p))
	must(t, os.WriteFile(p, []byte("export A=1\n"), 0o644)) // same bytes, another inode
	if got := s.hashFile(".envrc", st.Dev, st.Ino, st.Size, "mode:0644"); got != Unchecked {
		t.Fatalf("another inode than the one stat'd gave %q, want %q", got, Unchecked)
	}
}

// TestSubmoduleGitdirsAndHookDirsAreProtected: git runs a submodule's
// hooks from its gitdir under .git/modules (nested modules and names with
// a slash included), and husky's and a .githooks directory's hooks through
// core.hooksPath: a hook created in each is listed (found in review), and
// a submodule's objects are not hashed.
func TestSubmoduleGitdirsAndHookDirsAreProtected(t *testing.T) {
	ws := t.TempDir()
	mods := []string{".git/modules/lib", ".git/modules/vendor/dep", ".git/modules/lib/modules/inner"}
	for _, m := range mods {
		must(t, os.MkdirAll(filepath.Join(ws, m, "hooks"), 0o755))
		must(t, os.MkdirAll(filepath.Join(ws, m, "objects"), 0o755))
		must(t, os.WriteFile(filepath.Join(ws, m, "config"), []byte("[core]\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(ws, m, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(ws, m, "objects", "pack"), []byte("big"), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(ws, ".husky"), 0o755))
	before := Take(open(t, ws))
	var want []string
	for _, m := range mods {
		must(t, os.WriteFile(filepath.Join(ws, m, "hooks", "post-checkout"), []byte("evil"), 0o755))
		must(t, os.WriteFile(filepath.Join(ws, m, "objects", "pack"), []byte("changed"), 0o644))
		want = append(want, m+"/hooks/post-checkout")
	}
	must(t, os.WriteFile(filepath.Join(ws, mods[0], "config"), []byte("[core]\nhooksPath = elsewhere\n"), 0o644))
	want = append(want, mods[0]+"/config")
	for _, d := range []string{".husky", ".githooks"} {
		must(t, os.MkdirAll(filepath.Join(ws, d), 0o755))
		must(t, os.WriteFile(filepath.Join(ws, d, "pre-commit"), []byte("evil"), 0o755))
		want = append(want, d+"/pre-commit")
	}
	var got []string
	for _, c := range Diff(before, before.Again()) {
		got = append(got, c.Path)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s is not listed among %v", w, got)
		}
	}
	for _, g := range got {
		if strings.Contains(g, "objects") {
			t.Errorf("a submodule's objects were watched: %s", g)
		}
	}
}
