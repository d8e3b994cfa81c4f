package broker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// TestNotOnSanitizedPathNamesYourPath: a bare name that is not on the
// sanitized PATH but is on the PATH the broker was started with is
// refused EXECUTABLE_NOT_FOUND with where that PATH has it and the
// command that runs it; a name on neither says so.
func TestNotOnSanitizedPathNamesYourPath(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "mytool-x1")
	copyFile(t, "/bin/true", tool)
	must(t, os.WriteFile(filepath.Join(dir, "notexec-x1"), []byte("x"), 0o644))
	r := newRig(t, func(c *Config) {
		c.Environ = append(c.Environ, "PATH=relative:"+filepath.Join(dir, "absent")+":"+dir+":/usr/bin")
	})
	refusal := func(exe string, argv ...string) *wire.Error {
		t.Helper()
		req := r.request(argv...)
		req.Executable = exe
		_, err := r.cl.Submit(r.workspace, req)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeExecutableNotFound {
			t.Fatalf("%s: %v, want EXECUTABLE_NOT_FOUND", exe, err)
		}
		return we
	}
	e := refusal("mytool-x1", "a b", "-v")
	if want := "mytool-x1 is " + tool + " on your PATH; run it by that path: broker run -- " + tool + " …"; !strings.Contains(e.Message, want) {
		t.Fatalf("the refusal says %q, want it to contain %q", e.Message, want)
	}
	for _, name := range []string{"notexec-x1", "nowhere-x1"} {
		if e := refusal(name); !strings.Contains(e.Message, "not on your PATH either") {
			t.Fatalf("%s: the refusal says %q, want it to say it is not on your PATH either", name, e.Message)
		}
	}
}

// TestWorkspaceHoldingTheBinariesSaysWhatToDo: run from a checkout that
// holds bin/broker (the README's example), the workspace contains the
// broker's own binaries and is refused PATH_INVALID with a sentence that
// says where to run from and to pass --workspace.
func TestWorkspaceHoldingTheBinariesSaysWhatToDo(t *testing.T) {
	var bin string
	r := newRig(t, func(c *Config) {
		bin = filepath.Join(filepath.Dir(c.StateDir), "ws", "bin")
		must(t, os.MkdirAll(bin, 0o755))
		copyFile(t, "/bin/true", filepath.Join(bin, "broker"))
		c.Binaries = []string{filepath.Join(bin, "broker")}
	})
	_, err := r.cl.Submit(r.workspace, r.request())
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodePathInvalid {
		t.Fatalf("%v, want PATH_INVALID", err)
	}
	for _, want := range []string{"contains the directory of the broker's binary broker " + bin,
		"run broker from your project's directory, or pass --workspace DIR, a directory that does not contain " + bin} {
		if !strings.Contains(we.Message, want) {
			t.Errorf("the refusal %q does not say %q", we.Message, want)
		}
	}
}
