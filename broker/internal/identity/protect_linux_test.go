package identity

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"warrant/broker/internal/policy"
	"warrant/wire"
)

// resolveIn resolves the fixture's request, with the workspace root as
// its cwd, in the workspace ws.
func (f *fixture) resolveIn(ws string) (*Resolved, error) {
	req := f.request()
	req.Cwd = "."
	res, err := Resolve(&wire.Submit{Workspace: ws, Request: req}, f.protected, f.inputs, nil)
	if err == nil {
		f.t.Cleanup(res.Close)
	}
	return res, err
}

// wantRefused checks that ws is refused with PATH_INVALID and a sentence
// holding every piece of want.
func (f *fixture) wantRefused(ws string, want ...string) {
	f.t.Helper()
	_, err := f.resolveIn(ws)
	wantCode(f.t, err, wire.CodePathInvalid)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			f.t.Errorf("workspace %s: the refusal %q does not say %q", ws, err, w)
		}
	}
}

func (f *fixture) wantAllowed(ws string) {
	f.t.Helper()
	if _, err := f.resolveIn(ws); err != nil {
		f.t.Errorf("workspace %s refused: %v", ws, err)
	}
}

// TestWorkspaceOverlappingStateRefused: the state directory, a directory
// inside it and one containing it are refused, each with a sentence that
// names the overlap; the fixture's own workspace beside it is not.
func TestWorkspaceOverlappingStateRefused(t *testing.T) {
	f := newFixture(t)
	must(t, os.Mkdir(filepath.Join(f.state, "actions"), 0o700))
	f.wantRefused(f.state, "is the broker's state directory "+f.state, "is, contains or lies inside it",
		"run broker from your project's directory, or pass --workspace DIR, another directory")
	f.wantRefused(filepath.Join(f.state, "actions"), "lies inside the broker's state directory",
		"pass --workspace DIR, a directory outside "+f.state)
	f.wantRefused(filepath.Join(f.state, "keys"), "is the broker's key directory")
	f.wantRefused(filepath.Dir(f.state), "contains the broker's state directory "+f.state,
		"pass --workspace DIR, a directory that does not contain "+f.state)
	f.wantAllowed(f.workspace)
}

// TestWorkspaceHostPlacesRefused: /, the home directory, a system root,
// a directory containing a configured read path and a directory inside
// /proc, /sys or /dev are refused; a directory inside a system root or
// the home directory is not.
func TestWorkspaceHostPlacesRefused(t *testing.T) {
	f := newFixture(t)
	tools := filepath.Join(f.workspace, "tools")
	must(t, os.Mkdir(tools, 0o755))
	f.protect([]string{tools})
	f.wantRefused("/", "is the filesystem root /", "a directory inside it is fine",
		"run broker from your project's directory, or pass --workspace DIR, a directory inside it")
	f.wantRefused("/etc", "is the system directory /etc")
	f.wantRefused(f.workspace, "contains the configured read path "+tools)
	f.wantRefused(tools, "is the configured read path")
	f.wantAllowed(filepath.Join(f.workspace, "sub"))
	f.wantRefused("/proc/sys", "lies inside the kernel's filesystem /proc")
	f.wantRefused("/sys/kernel", "lies inside the kernel's filesystem /sys")
	f.wantRefused("/dev", "is the kernel's filesystem /dev")

	home, err := os.UserHomeDir()
	if err != nil || !isDir(home) {
		t.Logf("skip the home cases: no home directory (%q, %v)", home, err)
	} else {
		f.wantRefused(home, "is the home directory "+home)
		sub, err := os.MkdirTemp(home, "warrant-identity-test-")
		if err != nil {
			t.Logf("skip a subdirectory of home: %v", err)
		} else {
			t.Cleanup(func() { os.RemoveAll(sub) })
			f.wantAllowed(sub)
		}
	}
	for _, parent := range []string{"/var/tmp", "/usr/local/src"} {
		d, err := os.MkdirTemp(parent, "warrant-identity-test-")
		if err != nil {
			t.Logf("skip a project under %s: %v", parent, err)
			continue
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		f.wantAllowed(d)
	}
}

// TestWorkspaceComparedByIdentity: a place configured through a symlink
// protects the directory it names, a workspace spelled through a symlink
// is refused before any comparison, and a place moved after Protect is
// found where it is now.
func TestWorkspaceComparedByIdentity(t *testing.T) {
	f := newFixture(t)
	link := filepath.Join(t.TempDir(), "state-link")
	must(t, os.Symlink(f.state, link))
	p, err := Protect([]Place{{Name: "the broker's state directory", Path: link, Rule: Overlap}})
	must(t, err)
	t.Cleanup(p.Close)
	f.protected = p
	f.wantRefused(f.state, "is the broker's state directory "+link)
	f.wantRefused(filepath.Join(f.state, "keys"), "lies inside the broker's state directory")
	f.wantRefused(link, "is a symbolic link or has one on its way")

	// The state directory moved beneath the workspace after Protect.
	moved := filepath.Join(f.workspace, "sub", "state")
	must(t, os.Rename(f.state, moved))
	f.wantRefused(f.workspace, "contains the broker's state directory")
}

// TestWorkspaceBindMountRefused: a bind mount of the state directory, and
// one of a directory that contains it, have their identities; both are
// refused.
func TestWorkspaceBindMountRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: bind mounts need root")
	}
	f := newFixture(t)
	dir := t.TempDir()
	bind := func(src, dst string) bool {
		must(t, os.Mkdir(dst, 0o755))
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			t.Logf("skip the bind mount of %s: %v", src, err)
			return false
		}
		t.Cleanup(func() { syscall.Unmount(dst, syscall.MNT_DETACH) })
		return true
	}
	if !bind(f.state, filepath.Join(dir, "state-bind")) {
		t.Skip("skip: mount --bind is not permitted here")
	}
	f.wantRefused(filepath.Join(dir, "state-bind"), "is the broker's state directory")
	f.wantRefused(filepath.Join(dir, "state-bind", "keys"), "is the broker's key directory")
	must(t, os.Mkdir(filepath.Join(f.state, "journal-dir"), 0o700))
	f.wantRefused(filepath.Join(dir, "state-bind", "journal-dir"), "lies inside the broker's state directory")
	if bind(filepath.Dir(f.state), filepath.Join(dir, "parent-bind")) {
		f.wantRefused(filepath.Join(dir, "parent-bind"), "contains the broker's state directory")
		f.wantAllowed(filepath.Join(dir, "parent-bind", "ws"))
	}
}

// TestExecutableDirectoryWithheld: an executable whose directory is the
// home directory, above the state directory or inside it is refused with
// a sentence naming the read path to configure; one in a directory of its
// own is granted that directory.
func TestExecutableDirectoryWithheld(t *testing.T) {
	f := newFixture(t)
	above := filepath.Join(filepath.Dir(f.state), "tool") // beside the state directory: in its parent
	copyFile(t, f.tool, above)
	inside := filepath.Join(f.state, "keys", "tool")
	copyFile(t, f.tool, inside)
	cases := map[string]string{above: "above the broker's state directory", inside: "inside the broker's state directory"}
	if home, err := os.UserHomeDir(); err == nil && isDir(home) {
		if h, err := os.CreateTemp(home, "warrant-identity-test-"); err == nil {
			h.Close()
			t.Cleanup(func() { os.Remove(h.Name()) })
			must(t, os.Remove(h.Name())) // copyFile creates it 0755
			copyFile(t, f.tool, h.Name())
			cases[h.Name()] = "the home directory"
		} else {
			t.Logf("skip an executable in the home directory: %v", err)
		}
	}
	for exe, is := range cases {
		req := f.request()
		req.Executable = exe
		_, err := f.resolveReq(req)
		wantCode(t, err, wire.CodePathInvalid)
		for _, want := range []string{"the executable " + exe + " is in " + filepath.Dir(exe) + ", " + is, "broker serve --read-path DIR"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the refusal %q does not say %q", exe, err, want)
			}
		}
	}
	// The same program as the interpreter of a script in a granted directory.
	script := filepath.Join(filepath.Dir(f.tool), "script")
	must(t, os.WriteFile(script, []byte("#!"+above+"\n"), 0o755))
	req := f.request()
	req.Executable = script
	_, err := f.resolveReq(req)
	wantCode(t, err, wire.CodePathInvalid)
	if !strings.Contains(err.Error(), "the interpreter "+above) {
		t.Errorf("the refusal %q does not name the interpreter", err)
	}
	// A configured read path that covers the directory is the operator's
	// decision: nothing is added and nothing refused.
	f.base, err = policy.Base([]string{filepath.Dir(above)})
	must(t, err)
	req.Executable = above
	if _, err := f.resolveReq(req); err != nil {
		t.Errorf("an executable under a configured read path was refused: %v", err)
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// TestOverlapThroughABindMountIsRefused: through a bind mount one
// directory has two ways up, so a walk from a place must go to the root
// whatever an earlier walk passed. A workspace holding a bind mount of
// its own parent, and a workspace reached through a bind mount that an
// earlier place's walk passed by its other way up, are both refused as
// containing the place.
func TestOverlapThroughABindMountIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: bind mounts need root")
	}
	top := t.TempDir()
	for _, d := range []string{"w/m", "e", "srv/data/a", "srv/data/b", "mnt/x"} {
		must(t, os.MkdirAll(filepath.Join(top, d), 0o755))
	}
	bind := func(src, dst string) {
		if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
			t.Skipf("skip: mount --bind is not permitted here: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(dst, syscall.MNT_DETACH) })
	}
	bind(top, filepath.Join(top, "w", "m"))                                 // the workspace's parent, inside it
	bind(filepath.Join(top, "srv", "data"), filepath.Join(top, "mnt", "x")) // one directory, two ways up
	for _, c := range []struct {
		ws     string
		places []Place
		want   string
	}{
		{"w", []Place{{Name: "P", Path: filepath.Join(top, "w", "m", "e"), Rule: ItOrAbove}}, "contains P"},
		{"mnt", []Place{
			{Name: "P1", Path: filepath.Join(top, "srv", "data", "a"), Rule: Overlap},
			{Name: "P2", Path: filepath.Join(top, "mnt", "x", "b"), Rule: Overlap},
		}, "contains P2"},
	} {
		refusedAs(t, c.places, filepath.Join(top, c.ws), c.want)
	}
}

// refusedAs requires the workspace ws to be refused, against places, with
// PATH_INVALID and a sentence that says want.
func refusedAs(t *testing.T, places []Place, ws, want string) {
	t.Helper()
	p, err := Protect(places)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, err := os.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = p.check(f, ws)
	wantCode(t, err, wire.CodePathInvalid)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("workspace %s: the refusal %q does not say %q", ws, err, want)
	}
}

// TestWalkUpFromABindMountOntoItsOwnChild: with a directory bound onto a
// directory below it, ".." from the bind's root is the same (dev, ino) on
// the other mount, which is not the root. A place reached through the
// bind is found inside the workspace above both, and a workspace reached
// through it inside the place above both.
func TestWalkUpFromABindMountOntoItsOwnChild(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: bind mounts need root")
	}
	top := t.TempDir()
	for _, d := range []string{"a/b", "a/p"} {
		must(t, os.MkdirAll(filepath.Join(top, d), 0o755))
	}
	a, b := filepath.Join(top, "a"), filepath.Join(top, "a", "b")
	if err := syscall.Mount(a, b, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("skip: mount --bind is not permitted here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(b, syscall.MNT_DETACH) })
	for _, c := range []struct{ place, ws, want string }{
		{filepath.Join(b, "p"), top, "contains P"},
		{top, filepath.Join(b, "p"), "lies inside P"},
	} {
		refusedAs(t, []Place{{Name: "P", Path: c.place, Rule: Overlap}}, c.ws, c.want)
	}
}

// ancestry finds every directory above one nested deeper than it
// resolves from one descriptor (reanchor): the same chain as measuring
// each parent by path, up to the root.
func TestAncestryOfADeepDirectory(t *testing.T) {
	dir := t.TempDir()
	for range 2*reanchor + 5 {
		dir = filepath.Join(dir, "d")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var want []dirKey
	for p := dir; ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		want = append(want, dirKey{st.Dev, st.Ino})
		if p == "/" {
			break
		}
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ancestry(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ancestry has %d directories, the path %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("directory %d above: %v, by path %v", i, got[i], want[i])
		}
	}
}
