//go:build linux

package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/internal/snapshot"
	"warrant/wire"
)

// copyHelper puts a private copy of the helper in dir and returns its path.
func copyHelper(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "prog")
	copyExecutable(t, bins.helper, p)
	return p
}

func TestLauncherExecutableRewrittenInPlace(t *testing.T) {
	a := newAction(t)
	prog := copyHelper(t, a.Outside)
	req := a.Request(prog, "write", "marker", "x")
	f, err := os.OpenFile(prog, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("\x7fELF-tampered"), 0)
	f.Close()
	a.Run(req).Refused(t, wire.CodeIdentityDrift)
	noMarker(t, a.Workspace)
}

func TestLauncherExecutableReplacedByRename(t *testing.T) {
	a := newAction(t)
	prog := copyHelper(t, a.Outside)
	req := a.Request(prog, "write", "marker", "x")
	copyExecutable(t, prog, prog+".new")
	if err := os.Rename(prog+".new", prog); err != nil {
		t.Fatal(err)
	}
	a.Run(req).Refused(t, wire.CodeIdentityDrift)
	noMarker(t, a.Workspace)
}

// The on-disk identity still matches but the approved digest is not the
// digest of the bytes: the launcher measures what it will execute.
func TestLauncherDigestMismatch(t *testing.T) {
	a := newAction(t)
	req := a.Helper("write", "marker", "x")
	req.Executable.SHA256 = bytes.Repeat([]byte{0xaa}, 32)
	a.Run(req).Refused(t, wire.CodeIdentityDrift)
	a.Launch(launch{Req: req, Snapshots: true}).Refused(t, wire.CodeIdentityDrift)
	noMarker(t, a.Workspace)
}

// A broker-passed snapshot must be sealed, of the approved size, and hold
// the approved bytes.
func TestLauncherHostileSnapshots(t *testing.T) {
	a := newAction(t)
	req := a.Helper("write", "marker", "x")
	req.Snapshots = true
	content, err := os.ReadFile(bins.helper)
	if err != nil {
		t.Fatal(err)
	}
	tampered := append([]byte{}, content...)
	tampered[len(tampered)-1] ^= 0xff
	for name, mk := range map[string]func() int{
		"unsealed":    func() int { return memfd(t, content, 0) },
		"write-able":  func() int { return memfd(t, content, snapshot.Seals&^unix.F_SEAL_WRITE) },
		"other bytes": func() int { return memfd(t, tampered, snapshot.Seals) },
		"short":       func() int { return memfd(t, content[:len(content)-1], snapshot.Seals) },
	} {
		r := a.Launch(launch{Req: req, FDs: func(def []int) []int { return append(def, mk()) }})
		ref, ok := r.Reply.(*wire.Refused)
		if !ok || (ref.Code != wire.CodeIdentityDrift && ref.Code != wire.CodeArgumentsInvalid) || r.Execed {
			t.Errorf("%s snapshot: %#v", name, r.Reply)
		}
	}
	noMarker(t, a.Workspace)
}

// memfd returns a sealable memfd holding content, with seals added.
func memfd(t *testing.T, content []byte, seals int) int {
	fd, err := unix.MemfdCreate("snap", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	fillMemfd(t, fd, content, seals)
	return fd
}

// fillMemfd writes content into the memfd fd and adds seals (if any).
func fillMemfd(t *testing.T, fd int, content []byte, seals int) {
	t.Helper()
	if n, err := unix.Pwrite(fd, content, 0); err != nil || n != len(content) {
		t.Fatalf("fill the memfd: %d of %d bytes, %v", n, len(content), err)
	}
	if seals != 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLauncherSnapshotCacheHit(t *testing.T) {
	a := newAction(t)
	r := a.Launch(launch{Req: a.Helper("write", "out", "cached"), Snapshots: true})
	r.Ready(t)
	unchanged(t, a.Path("out"), "cached")
}

// scriptRequest approves a python "#!" script and its interpreter as one
// tuple.
func scriptRequest(t *testing.T, a *action, body string, args ...string) *wire.SpawnRequest {
	python := lookPath(t, "python3")
	interp := fileIdentity(t, python)
	script := writeFile(t, a.Path("script.py"), "#!"+python+"\n"+body)
	os.Chmod(script, 0o755)
	req := a.Request(script, args...)
	req.Interpreter = &wire.Interpreter{File: interp}
	return req
}

func TestLauncherScriptRunsThePinnedInterpreter(t *testing.T) {
	for _, cached := range []bool{false, true} {
		a := newAction(t)
		req := scriptRequest(t, a, "import sys\nopen('out','w').write(' '.join(sys.argv[1:]))\nprint('script ran')\n", "a b", "c")
		r := a.Launch(launch{Req: req, Snapshots: cached})
		ready := r.Ready(t)
		if strings.TrimSpace(r.Stdout) != "script ran" {
			t.Fatalf("cached=%v: stdout %q stderr %q", cached, r.Stdout, r.Stderr)
		}
		unchanged(t, a.Path("out"), "a b c")
		if !bytes.Equal(ready.InterpreterSHA256, req.Interpreter.File.SHA256) ||
			!bytes.Equal(ready.ExecutedSHA256, req.Executable.SHA256) {
			t.Fatal("Ready does not report the digests of the tuple")
		}
	}
}

func TestLauncherScriptWithoutInterpreterIsRefused(t *testing.T) {
	a := newAction(t)
	req := scriptRequest(t, a, "open('marker','w').write('x')\n")
	req.Interpreter = nil
	a.Run(req).Refused(t, wire.CodeArgumentsInvalid)
	noMarker(t, a.Workspace)
}

// A script whose interpreter changed after approval is refused.
func TestLauncherScriptInterpreterDrift(t *testing.T) {
	a := newAction(t)
	req := scriptRequest(t, a, "open('marker','w').write('x')\n")
	req.Interpreter.File = fileIdentity(t, copyHelper(t, a.Outside))
	req.Interpreter.File.Size++
	a.Run(req).Refused(t, wire.CodeIdentityDrift)
	noMarker(t, a.Workspace)
}

// A snapshot that passes every check but that the kernel will not execute
// (MFD_NOEXEC_SEAL) ends in ExecFailed after Ready, exit 127, nothing run.
func TestLauncherExecFailedIsReported(t *testing.T) {
	a := newAction(t)
	req := a.Helper("write", "marker", "x")
	req.Snapshots = true
	content, err := os.ReadFile(bins.helper)
	if err != nil {
		t.Fatal(err)
	}
	noexec, err := unix.MemfdCreate("noexec", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_NOEXEC_SEAL)
	if err != nil {
		t.Skipf("skip: this kernel has no MFD_NOEXEC_SEAL: %v", err)
	}
	fillMemfd(t, noexec, content, snapshot.Seals)
	r := a.Launch(launch{Req: req, FDs: func(def []int) []int { return append(def, noexec) }})
	failed, ok := r.Reply.(*wire.ExecFailed)
	if !ok || unix.Errno(failed.Errno) != unix.EACCES || r.State.ExitCode() != 127 || r.Execed {
		t.Fatalf("want ExecFailed EACCES and exit 127, got %#v, %v", r.Reply, r.State)
	}
	noMarker(t, a.Workspace)
}
