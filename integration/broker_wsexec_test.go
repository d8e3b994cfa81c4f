//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"warrant/wire"
)

// wantRun requires that `broker run --json` exited 0 with the target's
// exit 0, and returns the object.
func wantRun(t *testing.T, out string, code int) *runJSON {
	t.Helper()
	var j runJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("broker run --json printed no object: %v\n%s", err, out)
	}
	if code != 0 || j.Outcome != "exited" || j.ExitCode == nil || *j.ExitCode != 0 {
		t.Fatalf("want exit 0, got broker run exit %d: %s", code, out)
	}
	return &j
}

// TestBrokerWorkspaceExecutables: through `broker run` against a daemon,
// a workspace script (./tool), a workspace symlink to a runtime program
// (bin/sh → /bin/sh, which shows its argv[0]) and, where python3-venv is
// on the host, a venv's own .venv/bin/python run; the receipt names what
// was requested and every link on the way; argv[0] is what was requested.
func TestBrokerWorkspaceExecutables(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	tool := filepath.Join(a.WS, "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho \"tool ran with $*\" > tool.out\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := a.d.CLI("run", "--approve", "--json", "--workspace", a.WS, "--", "./tool", "one", "two")
	j := wantRun(t, out, code)
	if got := readHost(t, filepath.Join(a.WS, "tool.out")); got != "tool ran with one two\n" {
		t.Fatalf("host: tool.out is %q", got)
	}
	rc := d.Receipt(*j.ReceiptID)
	if rc.Identity.Requested != "./tool" || rc.Identity.Executable.Path != tool {
		t.Errorf("receipt: requested %q resolved %s, want ./tool at %s", rc.Identity.Requested, rc.Identity.Executable.Path, tool)
	}

	if err := os.Mkdir(filepath.Join(a.WS, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/sh", filepath.Join(a.WS, "bin", "sh")); err != nil {
		t.Fatal(err)
	}
	out, code = a.d.CLI("run", "--approve", "--json", "--workspace", a.WS, "--", "bin/sh", "-c", `echo "argv0=$0"`)
	j = wantRun(t, out, code)
	if j.Stdout.Text != "argv0=bin/sh\n" {
		t.Errorf("argv[0] is not what was requested: %q", j.Stdout.Text)
	}
	rc = d.Receipt(*j.ReceiptID)
	real, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if rc.Identity.Executable.Path != real || len(rc.Identity.Chain) == 0 || rc.Identity.Chain[0] != filepath.Join(a.WS, "bin", "sh") {
		t.Errorf("receipt: %s via %q, want %s via %s first", rc.Identity.Executable.Path, rc.Identity.Chain, real, filepath.Join(a.WS, "bin", "sh"))
	}

	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Logf("skip: the venv part: no /usr/bin/python3 on the host: %v", err)
		return
	}
	if b, err := exec.Command(py, "-m", "venv", "--without-pip", filepath.Join(a.WS, ".venv")).CombinedOutput(); err != nil {
		t.Logf("skip: the venv part: python3 -m venv fails on the host (python3-venv not installed?): %v\n%s", err, b)
		return
	}
	venv := filepath.Join(a.WS, ".venv")
	out, code = a.d.CLI("run", "--approve", "--json", "--workspace", a.WS, "--", ".venv/bin/python", "-c",
		"import sys; open('venv.out', 'w').write(sys.prefix)")
	j = wantRun(t, out, code)
	if got := readHost(t, filepath.Join(a.WS, "venv.out")); realPath(t, got) != realPath(t, venv) {
		t.Fatalf("host: .venv/bin/python ran with sys.prefix %q, want the venv %s", got, venv)
	}
	rc = d.Receipt(*j.ReceiptID)
	if rc.Identity.Requested != ".venv/bin/python" || !slices.Contains(rc.Identity.Chain, filepath.Join(venv, "bin", "python")) {
		t.Errorf("receipt: requested %q via %q", rc.Identity.Requested, rc.Identity.Chain)
	}
}

// TestBrokerWorkspaceExecutableLeadingOutside: a workspace symlink to a
// program outside the workspace and outside the read paths — directly,
// or through a symlinked directory — is refused with PATH_INVALID and a
// sentence naming where it leads; nothing runs (the program would leave
// a marker), and no approval is asked for.
func TestBrokerWorkspaceExecutableLeadingOutside(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	outside := t.TempDir()
	marker := filepath.Join(outside, "ran")
	prog := filepath.Join(outside, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho ran > "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(prog, filepath.Join(a.WS, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(a.WS, "tools")); err != nil {
		t.Fatal(err)
	}
	for _, exe := range []string{"./evil", "tools/prog"} {
		out, code := d.CLI("run", "--approve", "--json", "--workspace", a.WS, "--", exe)
		wantRefusedRun(t, []byte(out), code, "the workspace executable \""+exe+"\" leads to "+prog, "outside the workspace")
		wantAbsent(t, marker)
	}
	if pending := pendingApprovals(t, d); len(pending) != 0 {
		t.Errorf("a refused submit raised approval requests %v", pending)
	}
	// What is allowed is the same request once the link leads into the
	// read paths.
	if err := os.Remove(filepath.Join(a.WS, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/true", filepath.Join(a.WS, "evil")); err != nil {
		t.Fatal(err)
	}
	_, r := a.Run(wire.ActionRequest{Executable: "./evil", Cwd: ".", Profile: wire.ProfileShort, Session: "s-" + token(t)})
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("./evil → /bin/true: %s %+v", r.Outcome, r.Error)
	}
}
