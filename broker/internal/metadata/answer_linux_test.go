package metadata

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

func TestProcFD(t *testing.T) {
	c := &caller{pid: 4242}
	for p, want := range map[string]int32{"/proc/self/fd/3": 3, "/proc/thread-self/fd/10": 10, "/proc/4242/fd/0": 0} {
		if n, ok := c.procFD(p); !ok || n != want {
			t.Errorf("%s: %d %v, want %d", p, n, ok, want)
		}
	}
	for _, p := range []string{"/proc/self/fd/", "/proc/self/fd/03", "/proc/self/fd/3/x", "/proc/1/fd/3", "/proc/self/cwd",
		"/proc/self/exe", "proc/self/fd/3", "/proc/self/fd/-1", "/proc/self/fd/99999999999"} {
		if n, ok := c.procFD(p); ok {
			t.Errorf("%s was taken for descriptor %d", p, n)
		}
	}
}

func TestXattrNamespaces(t *testing.T) {
	for name, ok := range map[string]bool{"user.x": true, "system.posix_acl_access": true, "system.posix_acl_default": true,
		"security.capability": false, "trusted.x": false, "security.selinux": false, "system.other": false, "user": false} {
		if xattrAllowed(name) != ok {
			t.Errorf("%s: allowed %v, want %v", name, !ok, ok)
		}
	}
}

// TestBeneath: an object is beneath the scope only when it has a name
// under a root that reaches it without symlinks; one outside, one whose
// only name is reached through a symlink in the root, and the root's
// parent are not.
func TestBeneath(t *testing.T) {
	dir := t.TempDir()
	ws, outside := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(ws, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(ws, "sub", "in"), filepath.Join(outside, "out")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	rootFD, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.addRoot(rootFD)
	defer unix.Close(rootFD)
	checkBeneath(t, s, map[string]bool{filepath.Join(ws, "sub", "in"): true, ws: true, filepath.Join(ws, "sub"): true,
		filepath.Join(outside, "out"): false, filepath.Join(ws, "link", "out"): false, dir: false, "/etc/passwd": false})
}

// checkBeneath requires s to find each path beneath its scope (true) or
// not (false).
func checkBeneath(t *testing.T, s *Server, want map[string]bool) {
	t.Helper()
	for p, inside := range want {
		obj, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := s.beneathAt(obj)
		unix.Close(obj)
		if (err == nil) != inside {
			t.Errorf("%s: beneath %v (%v), want %v", p, err == nil, err, inside)
		}
		if err == nil {
			unix.Close(b)
		}
	}
}

// TestPreparedPolicyPathIsItsPin: a read-write policy path joins the
// writable scope only while it is the object of its pin. One renamed
// away and replaced by another directory since approval (what the
// launcher refuses to grant) is left out, and so is what lies beneath
// its replacement; one that is still its pin is served.
func TestPreparedPolicyPathIsItsPin(t *testing.T) {
	dir := t.TempDir()
	ws, kept, swapped := filepath.Join(dir, "ws"), filepath.Join(dir, "kept"), filepath.Join(dir, "swapped")
	for _, d := range []string{ws, kept, swapped} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pin := func(p string) wire.PathPin {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		return wire.PathPin{Path: p, Dev: st.Dev, Ino: st.Ino}
	}
	pins := []wire.PathPin{pin(kept), pin(swapped)}
	if err := os.Rename(swapped, swapped+".approved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(swapped, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(kept, "f"), filepath.Join(swapped, "f"), filepath.Join(swapped+".approved", "f")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wsFD, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(wsFD)
	s, err := Prepare(wsFD, nil, pins)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	checkBeneath(t, s, map[string]bool{filepath.Join(kept, "f"): true, kept: true,
		filepath.Join(swapped, "f"): false, swapped: false, filepath.Join(swapped+".approved", "f"): false})
}

// TestChmodNeverSetsSetID: a mode with a setuid or setgid bit is refused
// under its rule and changes nothing; setMode, which performs every chmod
// the broker makes, masks both bits off even were it asked for them.
func TestChmodNeverSetsSetID(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	obj, err := unix.Open(f, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(obj)
	var st unix.Stat_t
	if err := unix.Fstat(obj, &st); err != nil {
		t.Fatal(err)
	}
	c := &caller{}
	if errno := chmodOp(0o4755)(nil, c, obj, &st); errno != unix.EPERM || c.rule != wire.RuleSetID {
		t.Errorf("chmod 4755: %v under %s, want EPERM under setid-bit", errno, c.rule)
	}
	if m := lstat(t, f).Mode & 0o7777; m != 0o644 {
		t.Errorf("the refused chmod left mode %o, want 0644", m)
	}
	if errno := setMode(obj, 0o6755); errno != 0 {
		t.Fatal(errno)
	}
	if m := lstat(t, f).Mode & 0o7777; m != 0o755 {
		t.Errorf("setMode(6755) left mode %o, want 0755", m)
	}
}

// TestOpenSymlinkLoop: a loop of symlinks is answered ELOOP, as the
// caller's own call would be, and is no refusal; a path through a magic
// link (here to /proc/self/cwd, which would be the broker's) is refused
// as outside the writable scope.
func TestOpenSymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	for name, to := range map[string]string{"loop": "loop", "magic": "/proc/self/cwd"} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	for p, want := range map[string]struct {
		errno unix.Errno
		rule  wire.DenialRule
	}{"loop": {unix.ELOOP, 0}, "magic": {unix.EPERM, wire.RuleOutsideScope}} {
		c := &caller{pid: os.Getpid()}
		fd, errno := c.open(&call{dirfd: int32(dfd), path: &p, follow: true})
		if errno == 0 {
			unix.Close(fd)
		}
		if errno != want.errno || c.rule != want.rule {
			t.Errorf("%s: %v under %q, want %v under %q", p, errno, c.rule, want.errno, want.rule)
		}
	}
}

// A watch the broker cannot add for want of a kernel feature is refused
// under its own rule, not as an unreadable caller.
func TestPidfdRule(t *testing.T) {
	for err, want := range map[unix.Errno]wire.DenialRule{unix.EINVAL: wire.RuleKernelUnsupported,
		unix.ENOSYS: wire.RuleKernelUnsupported, unix.EPERM: wire.RuleCallerUnreadable, unix.ESRCH: wire.RuleCallerUnreadable} {
		if got := pidfdRule(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}
