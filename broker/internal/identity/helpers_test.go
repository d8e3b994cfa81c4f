package identity

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"warrant/broker/internal/policy"
	"warrant/wire"
)

// fixture is a workspace with a subdirectory and, outside it, a copy of
// /bin/true that tests may replace or link to.
type fixture struct {
	t         testing.TB
	workspace string
	tool      string
	env       []wire.EnvVar
	base      wire.Policy
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, workspace: filepath.Join(dir, "ws"), tool: filepath.Join(dir, "bin", "tool"),
		env: []wire.EnvVar{{Name: "LANG", Value: "C.UTF-8"}}}
	must(t, os.MkdirAll(filepath.Join(f.workspace, "sub"), 0o755))
	must(t, os.Mkdir(filepath.Dir(f.tool), 0o755))
	copyFile(t, "/bin/true", f.tool)
	var err error
	f.base, err = policy.Base(nil)
	must(t, err)
	return f
}

func (f *fixture) policyFor(exe wire.Executable) wire.Policy { return policy.For(f.base, exe) }

func (f *fixture) request(argv ...string) wire.ActionRequest {
	return wire.ActionRequest{Executable: f.tool, Argv: argv, Cwd: "sub", Profile: wire.ProfileShort}
}

// resolveReq resolves req in the fixture's workspace; the descriptors are
// closed when the test ends.
func (f *fixture) resolveReq(req wire.ActionRequest) (*Resolved, error) {
	res, err := Resolve(&wire.Submit{Workspace: f.workspace, Request: req}, f.env, f.policyFor)
	if err == nil {
		f.t.Cleanup(res.Close)
	}
	return res, err
}

func wantCode(t testing.TB, err error, code wire.Code) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("want %s, got %v", code, err)
	}
	if we.Message == "" {
		t.Fatalf("%s without a sentence", code)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	must(t, err)
	must(t, os.WriteFile(dst, b, 0o755))
}
