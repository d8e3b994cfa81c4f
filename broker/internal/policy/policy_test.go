package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"warrant/wire"
)

// TestForCoversTheWorkspace: an executable inside the workspace (by
// absolute path or workspace-relative) adds no read path — the workspace
// is read-write already — while one in a directory of its own outside
// gets that directory; a workspace executable leading outside the
// workspace and the read paths is PATH_INVALID.
func TestForCoversTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws, tools, state := filepath.Join(dir, "ws"), filepath.Join(dir, "tools"), filepath.Join(dir, "state")
	for _, d := range []string{filepath.Join(ws, "bin"), tools, state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	base, err := Base(nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Withhold("", state)
	if err != nil {
		t.Fatal(err)
	}
	exe := func(requested, file string) wire.Executable {
		return wire.Executable{Requested: requested, File: wire.FileIdentity{Path: file}}
	}
	for _, e := range []wire.Executable{exe(ws+"/bin/tool", ws+"/bin/tool"), exe("./bin/tool", ws+"/bin/tool"), exe(".venv/bin/python", "/usr/bin/python3")} {
		p, err := For(base, w, ws, e)
		if err != nil || !slices.Equal(p.ReadExec, base.ReadExec) {
			t.Errorf("%s: read paths %q, %v; want the base %q", e.Requested, p.ReadExec, err, base.ReadExec)
		}
	}
	p, err := For(base, w, ws, exe(tools+"/tool", tools+"/tool"))
	if err != nil || !slices.Contains(p.ReadExec, tools) {
		t.Errorf("a program's own directory outside is not granted: %q, %v", p.ReadExec, err)
	}
	if _, ok := p.Pin(tools); !ok {
		t.Errorf("the granted directory %s is not pinned", tools)
	}
	_, err = For(base, w, ws, exe("./tool", tools+"/tool"))
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodePathInvalid {
		t.Errorf("a workspace executable leading to %s: %v, want PATH_INVALID", tools, err)
	}
}

// TestWithReadWritePins: a read-write path added for a workspace cache is
// listed and pinned to the directory's (dev, ino), and the base policy is
// left as it was.
func TestWithReadWritePins(t *testing.T) {
	base, err := Base(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := WithReadWrite(base, dir)
	if err != nil {
		t.Fatal(err)
	}
	pin, ok := p.Pin(dir)
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.ReadWrite, []string{dir}) || !ok || pin.Dev != uint64(st.Dev) || pin.Ino != st.Ino {
		t.Fatalf("read-write %q, pin %+v (%v); want %s pinned at dev %d ino %d", p.ReadWrite, pin, ok, dir, st.Dev, st.Ino)
	}
	if len(base.ReadWrite) != 0 || len(base.Pins) == len(p.Pins) {
		t.Fatal("WithReadWrite changed the base policy")
	}
	if _, err := WithReadWrite(base, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing read-write path was pinned")
	}
}
