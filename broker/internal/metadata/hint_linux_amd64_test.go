package metadata

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// TestScopeHolds is the lexical decision: a cleaned absolute path lies
// beneath a root or is one; a sibling that shares a root's prefix does
// not, nor does ".." out of a root.
func TestScopeHolds(t *testing.T) {
	s := &Server{roots: []root{{path: "/w/ws"}, {path: "/home/a"}}}
	for p, want := range map[string]bool{
		"/w/ws": true, "/w/ws/f": true, "/w/ws/a/b": true, "/home/a/.cache/x": true,
		"/w/wsx": false, "/w/ws-other/f": false, "/w": false, "/etc/passwd": false, "/": false,
	} {
		if got := s.scopeHolds(p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
	for _, c := range []struct{ base, p, want string }{
		{"/w/ws", "f", "/w/ws/f"},
		{"/w/ws", "../out/f", "/w/out/f"},
		{"/w/ws", "a/../../ws/f", "/w/ws/f"},
		{"/w/ws", "/etc//x/../passwd", "/etc/passwd"},
		{"/", "../../etc", "/etc"},
	} {
		if got := lexical(c.base, c.p); got != c.want {
			t.Errorf("lexical(%q, %q) = %q, want %q", c.base, c.p, got, c.want)
		}
	}
}

// TestWriteHint runs the observer on opens this process makes up (its
// own memory and cwd are the caller's): a write-intent open outside the
// writable scope is a hint, with the path resolved — relative to the cwd
// or a directory descriptor, through "..", through a symlink that leads
// back into the scope; a write inside, a read with O_CREAT of a file that
// exists, O_CREAT through a dangling symlink (the kernel creates its
// target), O_CREAT|O_EXCL of a file that exists (EEXIST), a device and
// an unreadable path are nothing.
func TestWriteHint(t *testing.T) {
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, out := filepath.Join(top, "ws"), filepath.Join(top, "out")
	for _, d := range []string{ws, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "exists"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws, filepath.Join(top, "wslink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "newfile"), filepath.Join(out, "link")); err != nil {
		t.Fatal(err)
	}
	wsFD, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(wsFD)
	outFD, err := unix.Open(out, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(outFD)
	s, err := Prepare(wsFD, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	s.ObserveWrites()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	const wr, creat = unix.O_WRONLY, unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
	cwdFD := unix.AT_FDCWD
	for _, c := range []struct {
		nr     int32
		dirfd  int
		path   string
		flags  int
		effect wire.DenialEffect // 0: no hint
		object string
	}{
		{unix.SYS_OPENAT, cwdFD, out + "/new", creat, wire.EffectCreate, out + "/new"},
		{unix.SYS_OPENAT, cwdFD, out + "/exists", wr, wire.EffectWrite, out + "/exists"},
		{unix.SYS_OPENAT, cwdFD, out + "/exists", unix.O_RDONLY | unix.O_TRUNC, wire.EffectWrite, out + "/exists"},
		{unix.SYS_OPENAT, cwdFD, out + "/exists", unix.O_RDONLY | unix.O_CREAT, 0, ""}, // opens it for reading
		{unix.SYS_OPEN, cwdFD, ws + "/../out/x", creat, wire.EffectCreate, out + "/x"},
		{unix.SYS_CREAT, cwdFD, out + "/c", 0, wire.EffectCreate, out + "/c"},
		{unix.SYS_OPENAT, outFD, "f", creat, wire.EffectCreate, out + "/f"},
		{unix.SYS_OPENAT, wsFD, "../out/f", creat, wire.EffectCreate, out + "/f"},
		{unix.SYS_OPENAT, cwdFD, "hint-test-absent", creat, wire.EffectCreate, cwd + "/hint-test-absent"},
		{unix.SYS_OPENAT, cwdFD, ws + "/new", creat, 0, ""},
		{unix.SYS_OPENAT, wsFD, "sub/../f", creat, 0, ""},
		{unix.SYS_OPENAT, cwdFD, top + "/wslink/f", creat, 0, ""},                                    // outside as written, inside as resolved
		{unix.SYS_OPENAT, cwdFD, out + "/link", creat, 0, ""},                                        // dangling: creates ws/newfile
		{unix.SYS_OPENAT, cwdFD, out + "/exists", unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL, 0, ""}, // EEXIST
		{unix.SYS_OPENAT, cwdFD, "/dev/null", wr, 0, ""},
		{unix.SYS_OPENAT, cwdFD, out + "/absent/f", creat, 0, ""}, // ENOENT: no write was asked of Landlock
		{unix.SYS_OPENAT, cwdFD, "", creat, 0, ""},
	} {
		var d *wire.Denial
		func() {
			p := append([]byte(c.path), 0)
			n := &notif{Pid: uint32(os.Getpid()), Data: seccompData{Nr: c.nr, Arch: auditArch}}
			addr := uint64(uintptr(unsafe.Pointer(&p[0])))
			switch c.nr {
			case unix.SYS_OPENAT:
				n.Data.Args = [6]uint64{uint64(int64(c.dirfd)), addr, uint64(c.flags)}
			case unix.SYS_OPEN:
				n.Data.Args = [6]uint64{addr, uint64(c.flags)}
			case unix.SYS_CREAT:
				n.Data.Args = [6]uint64{addr, 0o644}
			}
			o, ok := writeOpen(&n.Data)
			if !ok {
				t.Fatalf("%s: not a write-intent open", callName(c.nr))
			}
			d = s.writeHint(n, o)
			runtime.KeepAlive(p)
		}()
		switch {
		case c.effect == 0 && d != nil:
			t.Errorf("%s(%d, %q, %#x): hint %+v, want none", callName(c.nr), c.dirfd, c.path, c.flags, d)
		case c.effect == 0:
		case d == nil:
			t.Errorf("%s(%d, %q, %#x): no hint, want %s %s", callName(c.nr), c.dirfd, c.path, c.flags, c.effect, c.object)
		case d.Effect != c.effect || d.Object != c.object || d.Call != callName(c.nr) || d.Rule != wire.RuleOutsideScope ||
			d.Source != wire.SourceHint:
			t.Errorf("%s(%d, %q, %#x): %+v, want %s %s", callName(c.nr), c.dirfd, c.path, c.flags, d, c.effect, c.object)
		}
	}
	if _, err := os.Lstat(out + "/new"); err == nil {
		t.Error("the observer made a file")
	}
}

// A server that does not observe writes reads nothing and hints nothing.
func TestWriteHintOff(t *testing.T) {
	cwdFD := int32(unix.AT_FDCWD)
	s, err := Prepare(-1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := []byte("/etc/x\x00")
	n := &notif{Pid: uint32(os.Getpid()), Data: seccompData{Nr: unix.SYS_OPENAT, Arch: auditArch,
		Args: [6]uint64{uint64(uint32(cwdFD)), uint64(uintptr(unsafe.Pointer(&p[0]))), unix.O_WRONLY}}}
	o, _ := writeOpen(&n.Data)
	if d := s.writeHint(n, o); d != nil {
		t.Errorf("hint %+v from a server that does not observe writes", d)
	}
	runtime.KeepAlive(p)
	if src := s.Stop().Denials.Sources; len(src) != 2 {
		t.Errorf("sources %v", src)
	}
}
