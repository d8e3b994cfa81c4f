//go:build linux

package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// protectedRepo makes a repository-shaped workspace: a gitdir with hooks,
// config and info, agent configuration, and a subdirectory for the cwd.
func protectedRepo(t testing.TB, ws string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{
		".git/HEAD":             []byte("ref: refs/heads/main\n"),
		".git/config":           []byte("[core]\n\tbare = false\n"),
		".git/hooks/pre-commit": []byte("#!/bin/sh\nexit 0\n"),
		".git/info/exclude":     []byte("# exclude\n"),
		".claude/settings.json": []byte("{\"permissions\":{\"deny\":[\"Bash\"]}}\n"),
		"sub/keep":              []byte("k"),
	}
	for rel, b := range files {
		p := filepath.Join(ws, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// protectBinds is what the broker asks for such a workspace.
var protectBinds = []wire.ProtectBind{{Path: ".claude", ReadOnly: true}, {Path: ".git"},
	{Path: ".git/config", ReadOnly: true}, {Path: ".git/hooks", ReadOnly: true}, {Path: ".git/info", ReadOnly: true}}

// TestLauncherProtectedPathsAreReadOnly is the mount mechanism: every
// write to a protected entry fails, by any path (from a cwd below, by
// renaming the gitdir away), the host's bytes and metadata are unchanged,
// git's own working files stay writable, and nothing of the namespace is
// seen on the host.
func TestLauncherProtectedPathsAreReadOnly(t *testing.T) {
	a := newAction(t)
	files := protectedRepo(t, a.Workspace)
	before := map[string]unix.Stat_t{}
	for rel := range files {
		before[rel] = lstat(t, a.Path(rel))
	}
	attempts := []string{
		"echo x > ../.git/hooks/pre-commit",
		"echo x >> ../.git/config",
		"echo x > ../.claude/settings.json",
		"echo x > ../.git/hooks/post-checkout",
		"echo x > ../.git/info/attributes",
		"rm ../.git/config",
		"mv ../.git/hooks ../.git/h2",
		"mv ../.git ../.gitx",
		"mv ../.claude ../.c2",
		"chmod 0777 ../.git/hooks/pre-commit",
		"touch ../.git/config",
	}
	var script strings.Builder
	for i, c := range attempts {
		script.WriteString("if " + c + " 2>/dev/null; then echo 'ALLOWED " + attempts[i] + "'; fi; ")
	}
	script.WriteString("echo idx > ../.git/index && echo main > ../.git/HEAD.lock && mv ../.git/HEAD.lock ../.git/HEAD && echo done")
	req := a.Request("sh", "-c", script.String())
	req.Cwd = dirIdentity(t, a.Workspace, "sub")
	req.Protect = protectBinds
	r := a.Run(req)
	ready := r.Ready(t)
	if !ready.MountNS || int(ready.Protected) != len(protectBinds) {
		t.Fatalf("Ready says mount_ns %v with %d binds, want %d", ready.MountNS, ready.Protected, len(protectBinds))
	}
	if strings.Contains(r.Stdout, "ALLOWED") || !strings.Contains(r.Stdout, "done") {
		t.Fatalf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	files[".git/HEAD"] = []byte("main\n") // rewritten by rename, as git does
	for rel, want := range files {
		got, err := os.ReadFile(a.Path(rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %q %v, want %q", rel, got, err, want)
		}
		if rel == ".git/HEAD" {
			continue
		}
		if st := lstat(t, a.Path(rel)); st.Mode != before[rel].Mode || st.Ino != before[rel].Ino || st.Mtim != before[rel].Mtim || st.Ctim != before[rel].Ctim {
			t.Fatalf("%s: metadata changed: %+v, was %+v", rel, st, before[rel])
		}
	}
	for _, p := range []string{".git/hooks/post-checkout", ".git/info/attributes", ".gitx", ".c2", ".git/h2"} {
		if _, err := os.Lstat(a.Path(p)); !os.IsNotExist(err) {
			t.Fatalf("%s exists on the host (%v)", p, err)
		}
	}
	if b, err := os.ReadFile(a.Path(".git/index")); err != nil || string(b) != "idx\n" {
		t.Fatalf(".git/index %q %v: git's working files must stay writable", b, err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(mounts, []byte(a.Workspace)) {
		t.Fatalf("a bind of the action reached the host's mount namespace:\n%s", mounts)
	}
}

// TestLauncherSkipsProtectedEntriesThatAreLinks: an entry replaced by a
// symlink (to a directory outside) since the broker recorded it is not
// bound (which would bind its target) and the run goes on.
func TestLauncherSkipsProtectedEntriesThatAreLinks(t *testing.T) {
	a := newAction(t)
	protectedRepo(t, a.Workspace)
	if err := os.RemoveAll(a.Path(".claude")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a.Outside, a.Path(".claude")); err != nil {
		t.Fatal(err)
	}
	req := a.Request("sh", "-c", "echo x > .git/hooks/pre-commit || echo refused")
	req.Protect = protectBinds
	r := a.Run(req)
	if ready := r.Ready(t); int(ready.Protected) != len(protectBinds)-1 || r.Stdout != "refused\n" {
		t.Fatalf("binds %d, stdout %q, stderr %q", ready.Protected, r.Stdout, r.Stderr)
	}
}

func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLauncherLeavesAliasedFilesUnbound: a read-only bind guards a name,
// not the file behind it, so a protected file with another name in the
// workspace is not bound (a write through that name would change it all
// the same) and Ready counts it out: it stays detected only.
func TestLauncherLeavesAliasedFilesUnbound(t *testing.T) {
	a := newAction(t)
	protectedRepo(t, a.Workspace)
	if err := os.Link(a.Path(".git/config"), a.Path("cfg")); err != nil {
		t.Fatal(err)
	}
	req := a.Request("sh", "-c", "echo x >> .git/config && echo written")
	req.Protect = protectBinds
	r := a.Run(req)
	if ready := r.Ready(t); int(ready.Protected) != len(protectBinds)-1 || r.Stdout != "written\n" {
		t.Fatalf("binds %d of %d, stdout %q, stderr %q", ready.Protected, len(protectBinds), r.Stdout, r.Stderr)
	}
}

// TestLauncherBindsMountsBeneathToo: a mount beneath a read-only entry
// (one made after the broker's admission checked for mounts) is cloned
// with it, still seen, and read-only too.
func TestLauncherBindsMountsBeneathToo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: needs root to mount")
	}
	a := newAction(t)
	protectedRepo(t, a.Workspace)
	sub := a.Path(".git/hooks/sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(a.Outside, sub, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("skip: bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(sub, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(a.Outside, "seen"), []byte("mounted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := a.Request("sh", "-c", "cat .git/hooks/sub/seen; echo x > .git/hooks/sub/planted && echo written; echo done")
	req.Protect = protectBinds
	r := a.Run(req)
	if r.Ready(t); r.Stdout != "mounted\ndone\n" {
		t.Fatalf("stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	if _, err := os.Lstat(filepath.Join(a.Outside, "planted")); !os.IsNotExist(err) {
		t.Fatalf("written through the mount beneath a read-only bind (%v)", err)
	}
}
