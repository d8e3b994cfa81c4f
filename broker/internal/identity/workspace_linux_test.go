package identity

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// resolveWS resolves the workspace executable exe with argv in the
// fixture's workspace.
func (f *fixture) resolveWS(exe string) (*Resolved, error) {
	req := f.request()
	req.Executable = exe
	return f.resolveReq(req)
}

// wantLauncherCanOpen requires that p opens as the launcher opens the
// executable it binds: by path, following no symlink.
func wantLauncherCanOpen(t *testing.T, p string) {
	t.Helper()
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		t.Fatalf("the launcher could not re-open %s without following symlinks: %v", p, err)
	}
	unix.Close(fd)
}

// TestWorkspaceExecutableInside: ./tool, a program in a subdirectory, one
// reached through a relative symlink (node_modules/.bin/jest style) and
// one through a symlinked directory resolve beneath the workspace to a
// canonical, symlink-free absolute path, with every link recorded by its
// absolute path; requested stays what the agent wrote, and no directory of
// the workspace (read-write already) is added to the read paths.
func TestWorkspaceExecutableInside(t *testing.T) {
	f := newFixture(t)
	ws := f.workspace
	copyFile(t, "/bin/true", filepath.Join(ws, "tool"))
	must(t, os.MkdirAll(filepath.Join(ws, "node_modules", "jest", "bin"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "node_modules", ".bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "node_modules", "jest", "bin", "jest.js"), []byte("#!/bin/sh\necho jest\n"), 0o755))
	must(t, os.Symlink("../jest/bin/jest.js", filepath.Join(ws, "node_modules", ".bin", "jest")))
	copyFile(t, "/bin/true", filepath.Join(ws, "sub", "x"))
	must(t, os.Symlink("sub", filepath.Join(ws, "bin")))
	for _, c := range []struct {
		exe, file string
		chain     []string
	}{
		{"./tool", ws + "/tool", nil},
		{"sub/x", ws + "/sub/x", nil},
		{"node_modules/.bin/jest", ws + "/node_modules/jest/bin/jest.js", []string{ws + "/node_modules/.bin/jest"}},
		{"./bin/x", ws + "/sub/x", []string{ws + "/bin"}},
	} {
		res, err := f.resolveWS(c.exe)
		if err != nil {
			t.Fatalf("%s: %v", c.exe, err)
		}
		e := res.Identity().Executable
		if e.Requested != c.exe || e.File.Path != c.file || !slices.Equal(e.Chain, c.chain) {
			t.Errorf("%s: requested %q, resolved %s via %q; want %s via %q", c.exe, e.Requested, e.File.Path, e.Chain, c.file, c.chain)
		}
		wantLauncherCanOpen(t, e.File.Path)
		if !slices.Equal(res.Identity().Policy.ReadExec, f.base.ReadExec) {
			t.Errorf("%s: read paths %q, want the base %q (the workspace covers its own programs)", c.exe, res.Identity().Policy.ReadExec, f.base.ReadExec)
		}
		var st unix.Stat_t
		must(t, unix.Fstat(int(res.Exe().Fd()), &st))
		if st.Ino != e.File.Ino {
			t.Errorf("%s: the descriptor is not the file identified", c.exe)
		}
	}
	res, err := f.resolveWS("node_modules/.bin/jest")
	must(t, err)
	if in := res.Identity().Executable.Interpreter; in == nil || res.Interp() == nil {
		t.Errorf("the script's interpreter is not pinned: %+v", in)
	}
}

// TestWorkspaceExecutableLeadingToReadPaths: .venv/bin/python style — a
// workspace symlink to a file under the read paths (absolute, or relative
// and climbing out of the workspace) resolves there, every hop recorded
// inside and outside, and nothing is granted.
func TestWorkspaceExecutableLeadingToReadPaths(t *testing.T) {
	f := newFixture(t)
	ws := f.workspace
	real, err := filepath.EvalSymlinks("/bin/true")
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(ws, ".venv", "bin"), 0o755))
	must(t, os.Symlink("/bin/true", filepath.Join(ws, ".venv", "bin", "python")))
	up := strings.Repeat("../", strings.Count(ws, "/")) + "bin/true"
	must(t, os.Symlink(up, filepath.Join(ws, "climb")))
	for exe, first := range map[string]string{".venv/bin/python": ws + "/.venv/bin/python", "./climb": ws + "/climb"} {
		res, err := f.resolveWS(exe)
		if err != nil {
			t.Fatalf("%s: %v", exe, err)
		}
		e := res.Identity().Executable
		if e.File.Path != real || len(e.Chain) == 0 || e.Chain[0] != first {
			t.Errorf("%s: resolved %s via %q; want %s via %s first", exe, e.File.Path, e.Chain, real, first)
		}
		wantLauncherCanOpen(t, e.File.Path)
		if !slices.Equal(res.Identity().Policy.ReadExec, f.base.ReadExec) {
			t.Errorf("%s: read paths %q grew", exe, res.Identity().Policy.ReadExec)
		}
	}
}

// TestWorkspaceExecutableOutsideRefused: a workspace symlink to a program
// outside the workspace and outside every read path (the fixture's tool
// beside it), absolute or climbing, is PATH_INVALID with a sentence that
// says where it leads and what to do; nothing is granted for it.
func TestWorkspaceExecutableOutsideRefused(t *testing.T) {
	f := newFixture(t)
	ws := f.workspace
	must(t, os.Symlink(f.tool, filepath.Join(ws, "abs")))
	must(t, os.Symlink("../bin/tool", filepath.Join(ws, "rel")))
	must(t, os.Mkdir(filepath.Join(ws, "d"), 0o755))
	must(t, os.Symlink(filepath.Dir(f.tool), filepath.Join(ws, "d", "bin")))
	for _, exe := range []string{"./abs", "./rel", "d/bin/tool"} {
		_, err := f.resolveWS(exe)
		wantCode(t, err, wire.CodePathInvalid)
		if msg := err.Error(); !strings.Contains(msg, f.tool) || !strings.Contains(msg, "outside the workspace") || !strings.Contains(msg, "--read-path") {
			t.Errorf("%s: %v", exe, err)
		}
	}
}

// TestWorkspaceExecutableNotFound: what is missing, not executable, a
// directory, a FIFO (which must not block) or a symlink loop is
// EXECUTABLE_NOT_FOUND; a symlink to "." names the workspace itself.
func TestWorkspaceExecutableNotFound(t *testing.T) {
	f := newFixture(t)
	ws := f.workspace
	must(t, os.WriteFile(filepath.Join(ws, "plain"), []byte("x"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o755))
	must(t, os.Symlink("loop", filepath.Join(ws, "loop")))
	must(t, os.Symlink(".", filepath.Join(ws, "self")))
	for _, exe := range []string{"./missing", "./plain", "./sub", "./fifo", "./loop", "./self", "sub/missing/x", "plain/x"} {
		_, err := f.resolveWS(exe)
		wantCode(t, err, wire.CodeExecutableNotFound)
	}
}

// TestWorkspaceExecutableRelativeToRoot: a workspace executable is
// resolved from the workspace root whatever the cwd.
func TestWorkspaceExecutableRelativeToRoot(t *testing.T) {
	f := newFixture(t)
	copyFile(t, "/bin/true", filepath.Join(f.workspace, "tool"))
	res, err := f.resolveWS("./tool") // the fixture's cwd is "sub"
	must(t, err)
	if got := res.Identity().Executable.File.Path; got != f.workspace+"/tool" {
		t.Fatalf("resolved %s", got)
	}
}
