//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// withCwd returns a helper request that writes a marker in cwd rel, with
// the identity of the directory at dir (what a fooled broker measured).
func withCwd(t *testing.T, a *action, rel, dir string) *wire.SpawnRequest {
	req := a.Helper("write", "marker", "x")
	id := dirIdentity(t, dir, dir)
	id.Path = rel
	req.Cwd = id
	return req
}

func noMarker(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if _, err := os.Lstat(filepath.Join(d, "marker")); !os.IsNotExist(err) {
			t.Fatalf("the target ran: %s/marker exists", d)
		}
	}
}

func TestLauncherCwd(t *testing.T) {
	a := newAction(t)
	if err := os.Mkdir(a.Path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := a.Run(withCwd(t, a, "sub", a.Path("sub")))
	if r.Ready(t); r.Stdout != "ok\n" {
		t.Fatalf("stdout %q", r.Stdout)
	}
	unchanged(t, filepath.Join(a.Path("sub"), "marker"), "x")
	if r.Reply.(*wire.Ready).Cwd.Path != "sub" {
		t.Fatalf("Ready.Cwd %+v", r.Reply.(*wire.Ready).Cwd)
	}

	links := map[string]string{"abs": a.Outside, "rel": "../" + filepath.Base(a.Outside), "magic": "/proc/self/cwd", "fd": "/proc/self/fd/0"}
	for name, target := range links {
		if err := os.Symlink(target, a.Path(name)); err != nil {
			t.Fatal(err)
		}
		a.Run(withCwd(t, a, name, a.Outside)).Refused(t, wire.CodeIdentityDrift)
	}
	// wire refuses to encode these, so they are spliced into a valid frame.
	for _, rel := range []string{"..", "../" + filepath.Base(a.Outside), a.Outside, "sub/../.."} {
		placeholder := strings.Repeat("q", len(rel))
		frame := splice(t, withCwd(t, a, placeholder, a.Outside), placeholder, rel)
		a.Launch(launch{Frame: frame}).Refused(t, wire.CodeArgumentsInvalid)
	}
	noMarker(t, a.Outside, a.Workspace)
}

func TestLauncherCwdReplacedAfterApproval(t *testing.T) {
	a := newAction(t)
	sub := a.Path("sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	req := withCwd(t, a, "sub", sub)
	// Keep the approved inode alive so that mkdir cannot reuse its
	// number: this test is about the path now naming another directory,
	// and a reused inode is told apart only by its birth time (shown in
	// internal/fsid's TestDirRecreatedIsNotTheSame).
	old, err := os.Open(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	a.Run(req).Refused(t, wire.CodeIdentityDrift)
	noMarker(t, sub, a.Workspace)
}

func TestLauncherCwdAcrossAMount(t *testing.T) {
	a := newAction(t)
	mnt := a.Path("mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("skip: cannot mount a tmpfs for the mount-crossing test: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	a.Run(withCwd(t, a, "mnt", mnt)).Refused(t, wire.CodeIdentityDrift)
	noMarker(t, mnt)
}
