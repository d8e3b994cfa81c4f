package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// mkGitdir makes the gitdir git recognises at dir (HEAD, objects/,
// refs/) with a sample hook, info/exclude and config.
func mkGitdir(t *testing.T, dir, config string) {
	t.Helper()
	for _, d := range []string{"objects", "refs/heads", "hooks", "info"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "config"), []byte(config), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "hooks", "pre-commit.sample"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "info", "exclude"), []byte("# exclude\n"), 0o644))
}

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(s), mode))
}

// changesOf runs the action do between a snapshot and its Again.
func changesOf(t *testing.T, ws string, do func()) map[string]wire.ProtectedChange {
	t.Helper()
	before := Take(open(t, ws))
	do()
	got := map[string]wire.ProtectedChange{}
	for _, c := range Diff(before, before.Again()) {
		got[c.Path] = c
	}
	return got
}

// wantListed requires path listed with a before state starting with
// before and an after state starting with after.
func wantListed(t *testing.T, got map[string]wire.ProtectedChange, path, before, after string) {
	t.Helper()
	c, ok := got[path]
	if !ok {
		t.Errorf("%s is not listed; listed: %v", path, keys(got))
		return
	}
	if !strings.HasPrefix(c.Before, before) || !strings.HasPrefix(c.After, after) {
		t.Errorf("%s: %q -> %q, want %q… -> %q…", path, c.Before, c.After, before, after)
	}
}

func keys(m map[string]wire.ProtectedChange) []string {
	var out []string
	for k, c := range m {
		out = append(out, fmt.Sprintf("%s: %s -> %s", k, c.Before, c.After))
	}
	return out
}

const evilConfig = "[core]\n\tfsmonitor = \"echo PWNED > /tmp/x; false\"\n"

// TestCommondirRedirectionIsListed: issue 31 reproduction 1. The target
// copies .git to .cx, plants fsmonitor in .cx/config and points
// .git/commondir at it: git then reads .cx/config. The redirection, where
// it resolves and the config git now reads are listed; a later run that
// changes nothing lists nothing, and one that edits the redirected config
// lists it.
func TestCommondirRedirectionIsListed(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n")
	got := changesOf(t, ws, func() {
		mkGitdir(t, filepath.Join(ws, ".cx"), "[core]\n"+evilConfig)
		must(t, os.Remove(filepath.Join(ws, ".cx", "hooks", "pre-commit.sample")))
		write(t, filepath.Join(ws, ".git", "commondir"), "../.cx\n", 0o644)
	})
	wantListed(t, got, ".git/commondir", Absent, "sha256:")
	wantListed(t, got, ".git/commondir (resolves to)", Absent, `".cx"`)
	wantListed(t, got, ".cx/config", Unchecked, "sha256:")

	if got := changesOf(t, ws, func() {}); len(got) != 0 {
		t.Errorf("a run that changes nothing lists %v", keys(got))
	}
	got = changesOf(t, ws, func() {
		write(t, filepath.Join(ws, ".cx", "hooks", "post-checkout"), "evil", 0o755)
	})
	wantListed(t, got, ".cx/hooks/post-checkout", Absent, "sha256:")
}

// TestGitfileRedirectionsAreListed: a submodule's .git gitfile pointed at
// a gitdir the target made in the workspace, and a linked worktree's
// gitfile pointed at one it made outside (its persistent cache): each
// redirection, where it resolves, and the redirected config are listed;
// the gitdir outside stays watched at later runs.
func TestGitfileRedirectionsAreListed(t *testing.T) {
	ws, cache := t.TempDir(), t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n")
	mkGitdir(t, filepath.Join(ws, ".git", "modules", "sub"), "[core]\n")
	write(t, filepath.Join(ws, "sub", ".git"), "gitdir: ../.git/modules/sub\n", 0o644)
	wt := filepath.Join(ws, ".git", "worktrees", "wt")
	write(t, filepath.Join(wt, "HEAD"), "ref: refs/heads/wt\n", 0o644)
	write(t, filepath.Join(wt, "commondir"), "../..\n", 0o644)
	write(t, filepath.Join(wt, "gitdir"), filepath.Join(ws, "wt", ".git")+"\n", 0o644)
	write(t, filepath.Join(ws, "wt", ".git"), "gitdir: "+wt+"\n", 0o644)
	evil := filepath.Join(cache, "evil")

	got := changesOf(t, ws, func() {
		mkGitdir(t, filepath.Join(ws, ".evil"), evilConfig)
		write(t, filepath.Join(ws, "sub", ".git"), "gitdir: ../.evil\n", 0o644)
		mkGitdir(t, evil, evilConfig)
		write(t, filepath.Join(ws, "wt", ".git"), "gitdir: "+evil+"\n", 0o644)
	})
	wantListed(t, got, "sub/.git", "sha256:", "sha256:")
	wantListed(t, got, "sub/.git (resolves to)", `".git/modules/sub"`, `".evil"`)
	wantListed(t, got, ".evil/config", Unchecked, "sha256:")
	wantListed(t, got, "wt/.git", "sha256:", "sha256:")
	wantListed(t, got, "wt/.git (resolves to)", `".git/worktrees/wt"`, fmt.Sprintf("%q outside the workspace", evil))
	wantListed(t, got, evil+"/config", Unchecked, "file size:") // outside: stat only, no digest

	// A run that changes nothing lists only what the config outside
	// sets: its contents are never read, so that is unchecked.
	got = changesOf(t, ws, func() {})
	wantListed(t, got, evil+"/config (core.hooksPath)", Unchecked, Unchecked)
	if len(got) != 1 {
		t.Errorf("a run that changes nothing lists %v", keys(got))
	}
	// Outside, a hooks directory is recorded by stat alone: a new hook
	// shows as its change, never by name.
	got = changesOf(t, ws, func() { write(t, filepath.Join(evil, "hooks", "post-checkout"), "evil", 0o755) })
	wantListed(t, got, evil+"/hooks", "dir mtime:", "dir mtime:")
	if _, ok := got[evil+"/hooks/post-checkout"]; ok {
		t.Errorf("a name inside an outside directory is listed: %v", keys(got))
	}
}

// TestWorktreeGitdirFilesAreProtected: a linked worktree's gitdir under
// .git/worktrees holds commondir, gitdir, config.worktree and info/
// (sparse-checkout); each change is listed.
func TestWorktreeGitdirFilesAreProtected(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n")
	wt := filepath.Join(ws, ".git", "worktrees", "wt")
	write(t, filepath.Join(wt, "HEAD"), "ref: refs/heads/wt\n", 0o644)
	write(t, filepath.Join(wt, "commondir"), "../..\n", 0o644)
	write(t, filepath.Join(wt, "gitdir"), "/elsewhere/wt/.git\n", 0o644)
	got := changesOf(t, ws, func() {
		write(t, filepath.Join(wt, "commondir"), "../../../.cx\n", 0o644)
		write(t, filepath.Join(wt, "gitdir"), "/evil/.git\n", 0o644)
		write(t, filepath.Join(wt, "config.worktree"), evilConfig, 0o644)
		write(t, filepath.Join(wt, "info", "sparse-checkout"), "/*\n", 0o644)
	})
	for _, p := range []string{"commondir", "gitdir"} {
		wantListed(t, got, ".git/worktrees/wt/"+p, "sha256:", "sha256:")
	}
	wantListed(t, got, ".git/worktrees/wt/config.worktree", Absent, "sha256:")
	wantListed(t, got, ".git/worktrees/wt/info/sparse-checkout", Absent, "sha256:")
	wantListed(t, got, ".git/worktrees/wt/commondir (resolves to)", `".git"`, `".cx"`)
}

// TestNestedRepositoriesAreProtected: every repository beneath the
// workspace is watched, not only the one at its root: a nested sub/.git,
// a bare repository, a repository created during the run and a gitfile
// planted in a subdirectory.
func TestNestedRepositoriesAreProtected(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, "a", "b", "sub", ".git"), "[core]\n")
	mkGitdir(t, filepath.Join(ws, "bare.git"), "[core]\n\tbare = true\n")
	got := changesOf(t, ws, func() {
		write(t, filepath.Join(ws, "a", "b", "sub", ".git", "hooks", "pre-commit"), "evil", 0o755)
		write(t, filepath.Join(ws, "a", "b", "sub", ".gitmodules"), "[submodule]\n", 0o644)
		write(t, filepath.Join(ws, "bare.git", "config"), evilConfig, 0o644)
		mkGitdir(t, filepath.Join(ws, "new", ".git"), evilConfig)
		write(t, filepath.Join(ws, "planted", ".git"), "gitdir: ../bare.git\n", 0o644)
	})
	wantListed(t, got, "a/b/sub/.git/hooks/pre-commit", Absent, "sha256:")
	wantListed(t, got, "a/b/sub/.gitmodules", Absent, "sha256:")
	wantListed(t, got, "bare.git/config", "sha256:", "sha256:")
	wantListed(t, got, "new/.git/config", Absent, "sha256:")
	wantListed(t, got, "planted/.git", Absent, "sha256:")
	wantListed(t, got, "planted/.git (resolves to)", Absent, `"bare.git"`)
}

// TestHooksPathIsProtected: the directory core.hooksPath names (relative
// to the worktree, absolute, or set by an included file) is watched like
// .git/hooks; a subsection's hooksPath is not git's.
func TestHooksPathIsProtected(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core \"x\"]\n\thooksPath = decoy\n[Core]\n\tHooksPath = tools/hooks # a comment\n[include]\n\tpath = ../shared.cfg\n")
	write(t, filepath.Join(ws, "shared.cfg"), "[core]\n", 0o644)
	mkGitdir(t, filepath.Join(ws, "nested", ".git"), "[core]\nhooksPath = \""+outside+"\"\n")
	must(t, os.MkdirAll(filepath.Join(ws, "decoy"), 0o755))
	got := changesOf(t, ws, func() {
		write(t, filepath.Join(ws, "tools", "hooks", "pre-commit"), "evil", 0o755)
		write(t, filepath.Join(outside, "pre-push"), "evil", 0o755)
		write(t, filepath.Join(ws, "decoy", "pre-commit"), "not a hook", 0o755)
	})
	wantListed(t, got, "tools/hooks/pre-commit", Absent, "sha256:")
	wantListed(t, got, outside, "dir mtime:", "dir mtime:") // by stat alone, never the names inside
	if _, ok := got["decoy/pre-commit"]; ok {
		t.Errorf("core.x.hooksPath was taken for core.hooksPath: %v", keys(got))
	}

	// The included file is watched; the hooksPath it sets is git's.
	got = changesOf(t, ws, func() {
		write(t, filepath.Join(ws, "shared.cfg"), "[core]\n\thooksPath = other\n", 0o644)
	})
	wantListed(t, got, "shared.cfg", "sha256:", "sha256:")
	wantListed(t, got, ".git/config (core.hooksPath)", `"tools/hooks"`, `"other"`)
	got = changesOf(t, ws, func() { write(t, filepath.Join(ws, "other", "pre-commit"), "evil", 0o755) })
	wantListed(t, got, "other/pre-commit", Absent, "sha256:")
}

// TestSymlinkedGitIsComparedMeaningfully: issue 31 — .git replaced by a
// symlink was listed once and then "unchecked -> unchecked" at every later
// run. The replacement is listed with where it resolves; a later run that
// changes nothing lists nothing, one that edits the gitdir it points to
// lists that, and one that retargets it lists the new target.
func TestSymlinkedGitIsComparedMeaningfully(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n")
	mkGitdir(t, filepath.Join(ws, ".other"), evilConfig)
	got := changesOf(t, ws, func() {
		must(t, os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, ".real")))
		must(t, os.Symlink(".real", filepath.Join(ws, ".git")))
	})
	wantListed(t, got, ".git", "dir mode:", "symlink:")
	wantListed(t, got, ".git (resolves to)", Absent, `".real"`)
	if got := changesOf(t, ws, func() {}); len(got) != 0 {
		t.Errorf("a run that changes nothing lists %v", keys(got))
	}
	got = changesOf(t, ws, func() { write(t, filepath.Join(ws, ".real", "config"), evilConfig, 0o644) })
	wantListed(t, got, ".real/config", "sha256:", "sha256:")
	got = changesOf(t, ws, func() {
		must(t, os.Remove(filepath.Join(ws, ".git")))
		must(t, os.Symlink(".other", filepath.Join(ws, ".git")))
	})
	wantListed(t, got, ".git", "symlink:", "symlink:")
	wantListed(t, got, ".git (resolves to)", `".real"`, `".other"`)
	for k, c := range got {
		if c.Before == Unchecked && c.After == Unchecked {
			t.Errorf("%s listed unchecked -> unchecked", k)
		}
	}
}

// TestSymlinkedHookTargetIsWatched: a hook that is a symlink to a script
// in the workspace runs that script: a change to the script is listed.
func TestSymlinkedHookTargetIsWatched(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n")
	write(t, filepath.Join(ws, "scripts", "pre-commit"), "#!/bin/sh\n", 0o755)
	must(t, os.Symlink("../../scripts/pre-commit", filepath.Join(ws, ".git", "hooks", "pre-commit")))
	got := changesOf(t, ws, func() { write(t, filepath.Join(ws, "scripts", "pre-commit"), "evil", 0o755) })
	wantListed(t, got, "scripts/pre-commit", "sha256:", "sha256:")
}

// TestAgentConfigIsProtected: the agent's and editor's own configuration
// (issue 31 §2) is on the closed list.
func TestAgentConfigIsProtected(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, ".claude", "settings.json"), "{}", 0o644)
	files := []string{".claude/settings.json", ".claude/settings.local.json", ".mcp.json", ".codex/config.toml",
		".cursor/mcp.json", ".agents/skills/x.md", ".gitconfig"}
	got := changesOf(t, ws, func() {
		for _, f := range files {
			write(t, filepath.Join(ws, f), `{"hooks":"evil"}`, 0o644)
		}
	})
	for _, f := range files {
		if _, ok := got[f]; !ok {
			t.Errorf("%s is not listed; listed: %v", f, keys(got))
		}
	}
}

// TestListingPutsGitFirstWithAPerRootCap: issue 31 — 300 files created
// in .devcontainer pushed a new .git/hooks/pre-commit past the 256-entry
// cap. Git comes first, every changed root is named, and no root takes
// more than its share.
func TestListingPutsGitFirstWithAPerRootCap(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n")
	before := Take(open(t, ws))
	for _, d := range []string{".devcontainer", ".vscode"} {
		for i := range 300 {
			write(t, filepath.Join(ws, d, fmt.Sprintf("f%03d", i)), "x", 0o644)
		}
	}
	write(t, filepath.Join(ws, ".envrc"), "evil", 0o644)
	write(t, filepath.Join(ws, ".claude", "settings.json"), "evil", 0o644)
	write(t, filepath.Join(ws, ".git", "hooks", "pre-commit"), "evil", 0o755)
	changes := Diff(before, before.Again())
	if len(changes) > wire.MaxProtectedChanges {
		t.Fatalf("%d changes listed, the cap is %d", len(changes), wire.MaxProtectedChanges)
	}
	if len(changes) == 0 || changes[0].Path != ".git/hooks/pre-commit" {
		t.Fatalf("git is not first: %v", changes[:min(3, len(changes))])
	}
	named := map[string]int{}
	for _, c := range changes {
		named[strings.SplitN(c.Path, "/", 2)[0]]++
	}
	for _, root := range []string{".git", ".claude", ".envrc", ".devcontainer", ".vscode"} {
		if named[root] == 0 {
			t.Errorf("changed root %s is not named", root)
		}
	}
	if named[".devcontainer"] > maxPerRoot || named[".vscode"] > maxPerRoot {
		t.Errorf("a root listed more than its cap of %d: %v", maxPerRoot, named)
	}
	more := 0
	for _, c := range changes {
		if strings.HasPrefix(c.Path, ".devcontainer/") && strings.Contains(c.Path, "more") {
			more++
			if !strings.Contains(c.Path, fmt.Sprint(301-maxPerRoot+1)) { // the directory and its 300 files
				t.Errorf("the summary line does not count the rest: %+v", c)
			}
		}
	}
	if more != 1 {
		t.Errorf(".devcontainer has %d summary lines, want 1", more)
	}
}

// TestRepositoryScanIsBounded: past the scan's bounds the rest of the
// workspace is unchecked (and so always listed), never claimed unchanged.
func TestRepositoryScanIsBounded(t *testing.T) {
	ws := t.TempDir()
	for i := range 5 {
		must(t, os.MkdirAll(filepath.Join(ws, fmt.Sprintf("d%d", i)), 0o755))
	}
	defer func(n int) { maxScanNames = n }(maxScanNames)
	maxScanNames = 3
	got := changesOf(t, ws, func() {})
	if c, ok := got[ScanBound]; !ok || c.Before != Unchecked || c.After != Unchecked {
		t.Errorf("a scan past its bound lists %v", keys(got))
	}
}

// TestSubmoduleHooksPathIsResolvedInItsWorktree: husky sets a relative
// core.hooksPath in a submodule's config; git resolves it in the
// submodule's worktree. A hook created there is listed, and a run that
// changes nothing lists nothing (nothing unchecked for ever).
func TestSubmoduleHooksPathIsResolvedInItsWorktree(t *testing.T) {
	ws := t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n")
	mkGitdir(t, filepath.Join(ws, ".git", "modules", "sub"), "[core]\n\thooksPath = .husky/_\n\tworktree = ../../../sub\n")
	write(t, filepath.Join(ws, "sub", ".git"), "gitdir: ../.git/modules/sub\n", 0o644)
	must(t, os.MkdirAll(filepath.Join(ws, "sub", ".husky", "_"), 0o755))
	if got := changesOf(t, ws, func() {}); len(got) != 0 {
		t.Errorf("a run that changes nothing lists %v", keys(got))
	}
	got := changesOf(t, ws, func() { write(t, filepath.Join(ws, "sub", ".husky", "_", "pre-commit"), "evil", 0o755) })
	wantListed(t, got, "sub/.husky/_/pre-commit", Absent, "sha256:")
	if len(got) != 1 {
		t.Errorf("listed %v, want the hook alone", keys(got))
	}
}
