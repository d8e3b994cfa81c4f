package identity

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"warrant/wire"
)

func TestIdentitySymlinkChainAndDigest(t *testing.T) {
	r := newFixture(t)
	dir := filepath.Dir(r.tool)
	must(t, os.Symlink("tool", filepath.Join(dir, "hop1")))
	must(t, os.Symlink(filepath.Join(dir, "hop1"), filepath.Join(dir, "hop2")))
	req := r.request()
	req.Executable = filepath.Join(dir, "hop2")
	res, err := r.resolveReq(req)
	must(t, err)
	e := res.Identity().Executable
	want := []string{filepath.Join(dir, "hop2"), filepath.Join(dir, "hop1")}
	if !slices.Equal(e.Chain, want) || e.File.Path != r.tool {
		t.Fatalf("chain %q to %s, want %q to %s", e.Chain, e.File.Path, want, r.tool)
	}
	content, err := os.ReadFile(r.tool)
	must(t, err)
	if sum := sha256.Sum256(content); !bytes.Equal(sum[:], e.File.SHA256) {
		t.Fatal("recorded digest is not the file's SHA-256")
	}
	if !slices.Contains(res.Identity().Policy.ReadExec, dir) {
		t.Fatalf("the executable's directory %s is not readable in %q", dir, res.Identity().Policy.ReadExec)
	}
	pd, _ := Digest(&res.Identity().Policy)
	if !bytes.Equal(pd, res.Identity().PolicyDigest) {
		t.Fatal("policy digest is not the SHA-256 of the canonical policy")
	}
	if !slices.Equal(res.Identity().Env, r.env) {
		t.Fatalf("identity environment %+v, want the given %+v", res.Identity().Env, r.env)
	}
}

func TestIdentityScriptPinsInterpreter(t *testing.T) {
	r := newFixture(t)
	dir := filepath.Dir(r.tool)
	script := filepath.Join(dir, "script")
	must(t, os.WriteFile(script, []byte("#!"+r.tool+" -x\nbody\n"), 0o755))
	req := r.request()
	req.Executable = script
	res, err := r.resolveReq(req)
	must(t, err)
	in := res.Identity().Executable.Interpreter
	if in == nil || in.File.Path != r.tool || in.Arg != "-x" || res.Interp() == nil {
		t.Fatalf("interpreter %+v", in)
	}
	// #!/usr/bin/env NAME pins NAME from the sanitized PATH.
	must(t, os.WriteFile(script, []byte("#!/usr/bin/env true\n"), 0o755))
	res, err = r.resolveReq(req)
	must(t, err)
	in = res.Identity().Executable.Interpreter
	if in == nil || !strings.HasSuffix(in.File.Path, "/true") || in.Arg != "" {
		t.Fatalf("env interpreter %+v", in)
	}
	for _, bad := range []string{"#!/usr/bin/env -S sh -x\n", "#!relative\n", "#!" + script + "\n"} {
		must(t, os.WriteFile(script, []byte(bad), 0o755))
		_, err = r.resolveReq(req)
		wantCode(t, err, wire.CodeArgumentsInvalid)
	}
}

func TestIdentityRefusals(t *testing.T) {
	r := newFixture(t)
	dir := filepath.Dir(r.tool)
	must(t, os.Symlink(filepath.Join(r.workspace, "sub"), filepath.Join(r.workspace, "link")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o755))
	big := filepath.Join(dir, "big")
	f, err := os.OpenFile(big, os.O_CREATE|os.O_WRONLY, 0o755)
	must(t, err)
	must(t, f.Truncate(512<<20+1))
	f.Close()
	must(t, os.WriteFile(filepath.Join(dir, "noexec"), []byte("x"), 0o644))
	cases := []struct {
		exe, cwd string
		code     wire.Code
	}{
		{r.tool, "link", wire.CodePathInvalid},
		{r.tool, "missing", wire.CodePathInvalid},
		{"no-such-program-here", ".", wire.CodeExecutableNotFound},
		{filepath.Join(dir, "noexec"), ".", wire.CodeExecutableNotFound},
		{filepath.Join(dir, "fifo"), ".", wire.CodeExecutableNotFound},
		{big, ".", wire.CodeArgumentsInvalid},
	}
	for _, c := range cases {
		req := r.request()
		req.Executable, req.Cwd = c.exe, c.cwd
		_, err := r.resolveReq(req)
		wantCode(t, err, c.code)
	}
	// A workspace reached through a symlink is refused.
	must(t, os.Symlink(r.workspace, r.workspace+"-link"))
	_, err = Resolve(&wire.Submit{Workspace: r.workspace + "-link", Request: r.request()}, r.protected, r.inputs, nil)
	wantCode(t, err, wire.CodePathInvalid)
}

func TestAdmitRefusals(t *testing.T) {
	ok := wire.Submit{Workspace: "/ws", Request: wire.ActionRequest{Executable: "true", Cwd: ".", Profile: wire.ProfileShort}}
	if err := Admit(&ok); err != nil {
		t.Fatal(err)
	}
	many := make([]string, wire.MaxArgs+1)
	cases := []struct {
		mut  func(*wire.Submit)
		code wire.Code
	}{
		{func(s *wire.Submit) { s.Request.Cwd = "/etc" }, wire.CodePathInvalid},
		{func(s *wire.Submit) { s.Request.Cwd = "../x" }, wire.CodePathInvalid},
		{func(s *wire.Submit) { s.Request.Cwd = "a/../../x" }, wire.CodePathInvalid},
		{func(s *wire.Submit) { s.Workspace = "rel" }, wire.CodePathInvalid},
		{func(s *wire.Submit) { s.Request.Profile = 9 }, wire.CodeArgumentsInvalid},
		{func(s *wire.Submit) { s.Request.Argv = many }, wire.CodeArgumentsInvalid},
		{func(s *wire.Submit) { s.Request.Argv = []string{strings.Repeat("x", wire.MaxArgBytes+1)} }, wire.CodeArgumentsInvalid},
		{func(s *wire.Submit) { s.Request.Argv = []string{"a\x00b"} }, wire.CodeArgumentsInvalid},
	}
	for _, exe := range []string{"../x", "a/../x", "a/..", "./", "./.", ".//x", "bin/", "bin//x", "./../x", "././x", "/usr/../bin/x"} {
		cases = append(cases, struct {
			mut  func(*wire.Submit)
			code wire.Code
		}{func(s *wire.Submit) { s.Request.Executable = exe }, wire.CodeArgumentsInvalid})
	}
	for _, c := range cases {
		s := ok
		c.mut(&s)
		wantCode(t, Admit(&s), c.code)
	}
	for _, exe := range []string{"./gradlew", ".venv/bin/python", "node_modules/.bin/jest", "./bin/x", "/usr/bin/true", "true"} {
		s := ok
		s.Request.Executable = exe
		if err := Admit(&s); err != nil {
			t.Errorf("%q: %v", exe, err)
		}
	}
}
