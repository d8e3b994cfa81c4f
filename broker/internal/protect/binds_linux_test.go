package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// TestBindsAreWhatExistsBeneathTheWorkspace: Binds lists, parents first
// and each once, the read-only entries (git's hooks, config and info of
// every gitdir, a worktree's redirection files, a gitfile, a
// core.hooksPath directory, agent and editor configuration) and pins
// each gitdir that holds some; nothing absent, outside, through a
// symlink or beneath a read-only directory.
func TestBindsAreWhatExistsBeneathTheWorkspace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	mkGitdir(t, filepath.Join(ws, ".git"), "[core]\n\thooksPath = tools/hooks\n")
	mkGitdir(t, filepath.Join(ws, ".git", "modules", "sub"), "[core]\n")
	wt := filepath.Join(ws, ".git", "worktrees", "wt")
	write(t, filepath.Join(wt, "HEAD"), "ref: refs/heads/wt\n", 0o644)
	write(t, filepath.Join(wt, "commondir"), "../..\n", 0o644)
	write(t, filepath.Join(wt, "gitdir"), filepath.Join(ws, "wt", ".git")+"\n", 0o644)
	write(t, filepath.Join(ws, "sub", ".git"), "gitdir: ../.git/modules/sub\n", 0o644)
	mkGitdir(t, filepath.Join(ws, "nested", ".git"), "[core]\n\thooksPath = "+outside+"\n")
	write(t, filepath.Join(ws, ".claude", "settings.json"), "{}", 0o644)
	for _, f := range []string{".mcp.json", ".envrc", ".gitmodules"} {
		write(t, filepath.Join(ws, f), "x", 0o644)
	}
	must(t, os.MkdirAll(filepath.Join(ws, "tools", "hooks"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "scripts", "hooks"), 0o755))
	must(t, os.Symlink("scripts/hooks", filepath.Join(ws, ".githooks")))
	must(t, os.MkdirAll(filepath.Join(ws, "dotfiles", "cursor"), 0o755))
	must(t, os.Symlink("dotfiles/cursor", filepath.Join(ws, ".cursor")))
	must(t, unix.Mkfifo(filepath.Join(ws, ".vscode"), 0o644))

	s := Take(open(t, ws))
	defer s.Release()
	var got []string
	for i, b := range s.Binds() {
		if err := wire.CheckRelPath(b.Path); err != nil || b.Path == "." {
			t.Errorf("bind %q: %v", b.Path, err)
		}
		if i > 0 && got[i-1] >= b.Path {
			t.Errorf("bind %q is not after %q", b.Path, got[i-1])
		}
		mode := "pin"
		if b.ReadOnly {
			mode = "ro"
		}
		got = append(got, b.Path+" "+mode)
	}
	want := []string{
		".claude ro", ".envrc ro",
		".git pin", ".git/config ro", ".git/hooks ro", ".git/info ro",
		".git/modules/sub pin", ".git/modules/sub/config ro", ".git/modules/sub/hooks ro", ".git/modules/sub/info ro",
		".git/worktrees/wt pin", ".git/worktrees/wt/commondir ro", ".git/worktrees/wt/gitdir ro",
		".gitmodules ro", ".mcp.json ro",
		"nested/.git pin", "nested/.git/config ro", "nested/.git/hooks ro", "nested/.git/info ro",
		"sub/.git ro", "tools/hooks ro",
	}
	if !slices.Equal(got, want) {
		t.Errorf("binds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := s.unbound(); n != 0 {
		t.Errorf("Unbound %d", n)
	}
	// Every bind exists as the type it was recorded as, nothing followed.
	for _, b := range s.Binds() {
		if typ := s.typeOf(b.Path); typ != unix.S_IFDIR && typ != unix.S_IFREG {
			t.Errorf("bind %s is of type %o", b.Path, typ)
		}
	}
}

// TestBindsAreBoundedGitFirst: past wire.MaxProtectBinds the rest is left
// to detection, git's entries before an editor's, and Unbound says how
// many.
func TestBindsAreBoundedGitFirst(t *testing.T) {
	ws := t.TempDir()
	for i := range 100 {
		mkGitdir(t, filepath.Join(ws, fmt.Sprintf("r%03d", i), ".git"), "[core]\n")
	}
	must(t, os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755))
	s := Take(open(t, ws))
	defer s.Release()
	b := s.Binds()
	if len(b) != wire.MaxProtectBinds || s.unbound() != 100*4+1-wire.MaxProtectBinds {
		t.Fatalf("%d binds, %d unbound; want %d and %d", len(b), s.unbound(), wire.MaxProtectBinds, 100*4+1-wire.MaxProtectBinds)
	}
	for i, x := range b {
		if x.Path == ".vscode" {
			t.Errorf("an editor's directory was bound before git's entries")
		}
		if i > 0 && b[i-1].Path >= x.Path {
			t.Errorf("bind %q is not after %q", x.Path, b[i-1].Path)
		}
	}
}

// TestFileTypesAreTheKernels: Binds compares recorded types with its own
// constants.
func TestFileTypesAreTheKernels(t *testing.T) {
	if typeDir != unix.S_IFDIR || typeReg != unix.S_IFREG {
		t.Fatal("typeDir or typeReg differs from the kernel's")
	}
}
