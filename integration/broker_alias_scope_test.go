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

// nodeFacts is what a chmod, chown or write through an alias of a file
// that is not a regular one could change, read on the host without
// opening it.
type nodeFacts struct {
	mode, uid, gid uint32
	nlink, rdev    uint64
	mtime, ctime   unix.Timespec
}

func lstatFacts(t *testing.T, p string) nodeFacts {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return nodeFacts{mode: st.Mode, uid: st.Uid, gid: st.Gid, nlink: uint64(st.Nlink), rdev: st.Rdev, mtime: st.Mtim, ctime: st.Ctim}
}

// specialAttack would change the planted node's mode through the
// metadata server, write to it and leave a marker, were it ever run.
const specialAttack = "chmod 0666 planted; echo pwned > planted; echo ran > marker"

// plantSpecial makes a node of kind outside, in dir, with mode 0600 and
// owned by uid, links it into ws as "planted", and returns a check that
// nothing reached it: its metadata unchanged, the command not run and,
// for a FIFO, no byte written to the reader the test holds open (so that
// a write could not block).
func plantSpecial(t *testing.T, kind, dir, ws string, uid int) func() {
	t.Helper()
	p := filepath.Join(dir, "outside-"+kind)
	var fifo *os.File
	switch kind {
	case "fifo":
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fifo = os.NewFile(uintptr(fd), p)
		t.Cleanup(func() { fifo.Close() })
	case "device":
		if err := unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
			t.Skipf("skip: cannot make a device node here: %v", err)
		}
	case "socket":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: p}); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	default:
		panic("plantSpecial: " + kind)
	}
	if err := os.Lchown(p, uid, uid); err != nil {
		t.Fatal(err)
	}
	mustLink(t, p, filepath.Join(ws, "planted"))
	before := lstatFacts(t, p)
	return func() {
		t.Helper()
		if after := lstatFacts(t, p); after != before {
			t.Errorf("the %s outside changed: %+v -> %+v", kind, before, after)
		}
		if fifo != nil {
			var b [16]byte
			// 0 bytes: no writer left anything (EOF, or EAGAIN while one is open).
			if n, err := unix.Read(int(fifo.Fd()), b[:]); n > 0 || err != nil && err != unix.EAGAIN {
				t.Errorf("the FIFO outside was written to: %q, %v", b[:max(n, 0)], err)
			}
		}
		if _, err := os.Lstat(filepath.Join(ws, "marker")); !os.IsNotExist(err) {
			t.Errorf("the command ran: marker %v", err)
		}
	}
}

// requireKindRefusal requires a WORKSPACE_ALIASED refusal naming the
// planted link and its kind. It does not stop the test, so that the host
// object is checked either way.
func requireKindRefusal(t *testing.T, j *runJSON, code int, kind string) {
	t.Helper()
	if code != 125 || j.Error == nil || j.Error.Code != wire.CodeWorkspaceAliased.String() || j.Handle != nil {
		t.Errorf("broker run in an aliased workspace: exit %d, handle %v, error %+v; want 125 and WORKSPACE_ALIASED", code, j.Handle, j.Error)
		return
	}
	if want := `1 file in the workspace is a hard link to a file with a name outside it, which the sandbox would write through: "planted" (` + kind + `)`; !strings.Contains(j.Error.Message, want) {
		t.Errorf("the refusal does not say %q: %q", want, j.Error.Message)
	}
}

// TestBrokerAliasedSpecialFilesRefused (issue 31, reproduction 6): a hard
// link in the workspace to a FIFO, a character device or a unix socket
// outside it is refused like one to a regular file; the node outside
// keeps its mode, owner and times (the metadata server never chmods it),
// nothing is written to the FIFO, and the command never runs.
func TestBrokerAliasedSpecialFilesRefused(t *testing.T) {
	d := shared(t)
	for kind, words := range map[string]string{"fifo": "a FIFO", "device": "a character device", "socket": "a socket"} {
		t.Run(kind, func(t *testing.T) {
			a := d.newAgent(t)
			unchanged := plantSpecial(t, kind, filepath.Dir(a.WS), a.WS, 0)
			_, j, code := a.run(wire.ProfileShort, "sh", "-c", specialAttack)
			requireKindRefusal(t, j, code, words)
			unchanged()
		})
	}
}

// TestBrokerAliasedSpecialFilesRefusedAsUser: the same for uid 65534's
// broker, with a FIFO of its own in its home linked into its workspace.
func TestBrokerAliasedSpecialFilesRefusedAsUser(t *testing.T) {
	u := asNobody(t)
	unchanged := plantSpecial(t, "fifo", u.home, u.ws, nobody)
	j, code := u.runStatus("sh", "-c", specialAttack)
	requireKindRefusal(t, &j, code, "a FIFO")
	unchanged()
}

// requireMountRefusal requires `broker run`'s refusal of a workspace
// holding the mount point rel, without stopping the test.
func requireMountRefusal(t *testing.T, j *runJSON, code int, rel string) {
	t.Helper()
	if code != 125 || j.Error == nil || j.Error.Code != wire.CodeWorkspaceAliased.String() || j.Handle != nil {
		t.Errorf("broker run with a mount point in the workspace: exit %d, handle %v, error %+v; want 125 and WORKSPACE_ALIASED", code, j.Handle, j.Error)
		return
	}
	for _, want := range []string{`"` + rel + `" in the workspace is a mount point`, "the workspace must be one filesystem with no mounts inside it"} {
		if !strings.Contains(j.Error.Message, want) {
			t.Errorf("the refusal does not say %q: %q", want, j.Error.Message)
		}
	}
}

// mountAttack would write through the mount point and leave a marker.
const mountAttack = "echo pwned > sub/x; echo ran > marker"

// bindInto bind-mounts a fresh directory outside (made here) onto ws/sub
// until the test ends; it skips where mounting is not allowed.
func bindInto(t *testing.T, outside, ws string) {
	t.Helper()
	for _, d := range []string{outside, filepath.Join(ws, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(outside, filepath.Join(ws, "sub"), "", unix.MS_BIND, ""); err != nil {
		t.Skipf("skip: cannot bind-mount here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(filepath.Join(ws, "sub"), unix.MNT_DETACH); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
}

// requireUntouched requires the directory outside to hold nothing and the
// marker to be absent.
func requireUntouched(t *testing.T, outside, ws string) {
	t.Helper()
	if names, err := os.ReadDir(outside); err != nil || len(names) != 0 {
		t.Fatalf("the directory outside holds %v (%v): written through the mount", names, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "marker")); !os.IsNotExist(err) {
		t.Fatalf("the command ran: marker %v", err)
	}
}

// TestBrokerMountInWorkspaceRefused (issue 31, reproduction 6): a
// directory outside bind-mounted onto a workspace subdirectory makes the
// run refused, naming the mount point; nothing is written through it.
func TestBrokerMountInWorkspaceRefused(t *testing.T) {
	a := shared(t).newAgent(t)
	outside := filepath.Join(filepath.Dir(a.WS), "outside")
	bindInto(t, outside, a.WS)
	_, j, code := a.run(wire.ProfileShort, "sh", "-c", mountAttack)
	requireMountRefusal(t, j, code, "sub")
	requireUntouched(t, outside, a.WS)
}

// TestBrokerMountInWorkspaceRefusedAsUser: the same for uid 65534's
// broker (the test, as root, makes the mount).
func TestBrokerMountInWorkspaceRefusedAsUser(t *testing.T) {
	u := asNobody(t)
	outside := filepath.Join(u.home, "outside")
	bindInto(t, outside, u.ws)
	u.chownHome()
	j, code := u.runStatus("sh", "-c", mountAttack)
	requireMountRefusal(t, &j, code, "sub")
	requireUntouched(t, outside, u.ws)
}

// uvLink is what uv does: it unpacks into its cache under
// $XDG_CACHE_HOME/uv and hard-links the files into .venv. It prints the
// cache directory.
const uvLink = `set -e; mkdir -p "$XDG_CACHE_HOME/uv/archive" .venv; echo 'print("pkg")' > "$XDG_CACHE_HOME/uv/archive/pkg.py"; ` +
	`ln "$XDG_CACHE_HOME/uv/archive/pkg.py" .venv/pkg.py; printf %s "$XDG_CACHE_HOME"`

// requireCacheLinked requires ws/.venv/pkg.py to have been linked from the
// cache (two names), and returns the name in the cache.
func requireCacheLinked(t *testing.T, ws, xdg string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(ws, ".venv", "pkg.py"), &st); err != nil || st.Nlink != 2 {
		t.Fatalf(".venv/pkg.py: %v, nlink %d; want the target's hard link from its cache", err, st.Nlink)
	}
	inCache := filepath.Join(xdg, "uv", "archive", "pkg.py")
	var cst unix.Stat_t
	if err := unix.Lstat(inCache, &cst); err != nil || cst.Ino != st.Ino {
		t.Fatalf("%s is not the other name of .venv/pkg.py: %v", inCache, err)
	}
	return inCache
}

// TestBrokerCacheLinksRun (issue 31, reproduction 10): a file the target
// hard-links from its workspace's cache into the workspace, as uv does,
// has every name in the writable scope: the next runs of the workspace
// are admitted (twice) and read it. A link to a file in another
// workspace's cache, or a third name of the cached file outside the
// scope, is still refused.
func TestBrokerCacheLinksRun(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	_, j, code := a.run(wire.ProfileShort, "sh", "-c", uvLink)
	if code != 0 || j.Outcome != "exited" {
		t.Fatalf("the uv-style link: exit %d, outcome %s, error %+v, stderr %q", code, j.Outcome, j.Error, j.Stderr.Text)
	}
	inCache := requireCacheLinked(t, a.WS, j.Stdout.Text)
	for i := range 2 {
		_, j, code := a.run(wire.ProfileShort, "cat", ".venv/pkg.py")
		if code != 0 || j.Outcome != "exited" || j.Stdout.Text != "print(\"pkg\")\n" {
			t.Fatalf("run %d after the link: exit %d, outcome %s, error %+v, stdout %q", i+2, code, j.Outcome, j.Error, j.Stdout.Text)
		}
	}

	b := d.newAgent(t)
	_, j, code = b.run(wire.ProfileShort, "sh", "-c", `echo foreign > "$XDG_CACHE_HOME/f"; printf %s "$XDG_CACHE_HOME"`)
	if code != 0 || j.Stdout.Text == "" || j.Stdout.Text == filepath.Dir(inCache) {
		t.Fatalf("another workspace's cache: exit %d, %q, error %+v", code, j.Stdout.Text, j.Error)
	}
	mustLink(t, filepath.Join(j.Stdout.Text, "f"), filepath.Join(a.WS, "planted"))
	_, j, code = a.run(wire.ProfileShort, "sh", "-c", aliasAttack)
	requireAliasRefusal(t, j, code)
	if err := os.Remove(filepath.Join(a.WS, "planted")); err != nil {
		t.Fatal(err)
	}

	elsewhere := filepath.Join(filepath.Dir(a.WS), "elsewhere")
	mustLink(t, inCache, elsewhere)
	_, j, code = a.run(wire.ProfileShort, "cat", ".venv/pkg.py")
	if code != 125 || j.Error == nil || j.Error.Code != wire.CodeWorkspaceAliased.String() || !strings.Contains(j.Error.Message, `".venv/pkg.py"`) {
		t.Fatalf("a third name outside the scope: exit %d, error %+v; want WORKSPACE_ALIASED naming .venv/pkg.py", code, j.Error)
	}
}

// TestBrokerCacheLinksRunAsUser: the same links for uid 65534's broker
// pass twice in a row.
func TestBrokerCacheLinksRunAsUser(t *testing.T) {
	u := asNobody(t)
	j, code := u.runStatus("sh", "-c", uvLink)
	if code != 0 || j.Outcome != "exited" {
		t.Fatalf("the uv-style link as uid %d: exit %d, outcome %s, error %+v, stderr %q", nobody, code, j.Outcome, j.Error, j.Stderr.Text)
	}
	inCache := requireCacheLinked(t, u.ws, j.Stdout.Text)
	for i := range 2 {
		j, code := u.runStatus("cat", ".venv/pkg.py")
		if code != 0 || j.Outcome != "exited" || j.Stdout.Text != "print(\"pkg\")\n" {
			t.Fatalf("run %d after the link as uid %d: exit %d, outcome %s, error %+v, stdout %q", i+2, nobody, code, j.Outcome, j.Error, j.Stdout.Text)
		}
	}
	mustLink(t, inCache, filepath.Join(u.home, "elsewhere"))
	j, code = u.runStatus("cat", ".venv/pkg.py")
	if code != 125 || j.Error == nil || j.Error.Code != wire.CodeWorkspaceAliased.String() || !strings.Contains(j.Error.Message, `".venv/pkg.py"`) {
		t.Fatalf("a third name outside the scope as uid %d: exit %d, error %+v", nobody, code, j.Error)
	}
}
