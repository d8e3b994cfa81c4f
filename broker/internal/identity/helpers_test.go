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
// /bin/true that tests may replace or link to, and a state directory
// beside them that the fixture's protected places and withheld
// directories are built around.
type fixture struct {
	t         testing.TB
	workspace string
	tool      string
	state     string
	env       []wire.EnvVar
	base      wire.Policy
	protected *Protected
	withheld  *policy.Withheld
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, workspace: filepath.Join(dir, "ws"), tool: filepath.Join(dir, "bin", "tool"),
		state: filepath.Join(dir, "state"), env: []wire.EnvVar{{Name: "LANG", Value: "C.UTF-8"}}}
	must(t, os.MkdirAll(filepath.Join(f.workspace, "sub"), 0o755))
	must(t, os.Mkdir(filepath.Dir(f.tool), 0o755))
	must(t, os.MkdirAll(filepath.Join(f.state, "keys"), 0o700))
	copyFile(t, "/bin/true", f.tool)
	var err error
	f.base, err = policy.Base(nil)
	must(t, err)
	f.protect(nil)
	home, _ := os.UserHomeDir()
	f.withheld, err = policy.Withhold(home, f.state)
	must(t, err)
	return f
}

// protect (re)builds the fixture's protected places as the broker does
// (broker/internal/admission/authority.go), around its state directory, with readPaths as
// the configured read paths.
func (f *fixture) protect(readPaths []string) {
	f.t.Helper()
	home, _ := os.UserHomeDir()
	places := []Place{
		{Name: "the filesystem root", Path: "/", Rule: Itself},
		{Name: "the home directory", Path: home, Rule: Itself, Optional: true},
		{Name: "the broker's state directory", Path: f.state, Rule: Overlap},
		{Name: "the broker's key directory", Path: filepath.Join(f.state, "keys"), Rule: Overlap},
	}
	for _, p := range []string{"/usr", "/etc", "/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/boot", "/var"} {
		places = append(places, Place{Name: "the system directory", Path: p, Rule: ItOrAbove, Optional: true})
	}
	for _, p := range readPaths {
		places = append(places, Place{Name: "the configured read path", Path: p, Rule: ItOrAbove})
	}
	for _, p := range []string{"/proc", "/sys", "/dev"} {
		places = append(places, Place{Name: "the kernel's filesystem", Path: p, Rule: ItOrBelow, Optional: true})
	}
	p, err := Protect(places)
	must(f.t, err)
	f.t.Cleanup(p.Close)
	f.protected = p
}

// inputs are the fixture's environment and the default policy.
func (f *fixture) inputs(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, error) {
	pol, err := policy.For(f.base, f.withheld, ws.Path, exe)
	return f.env, pol, err
}

func (f *fixture) request(argv ...string) wire.ActionRequest {
	return wire.ActionRequest{Executable: f.tool, Argv: argv, Cwd: "sub", Profile: wire.ProfileShort}
}

// resolveReq resolves req in the fixture's workspace; the descriptors are
// closed when the test ends.
func (f *fixture) resolveReq(req wire.ActionRequest) (*Resolved, error) {
	res, err := Resolve(&wire.Submit{Workspace: f.workspace, Request: req}, f.protected, f.inputs, nil)
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
