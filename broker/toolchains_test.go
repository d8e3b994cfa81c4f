package broker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"warrant/broker/internal/identity"
	"warrant/wire"
)

// jdkTree is a JDK of the documented layout (a release file with
// JAVA_VERSION, bin/java) in a directory of its own, outside the read
// paths; java is a stand-in that runs /bin/true.
func jdkTree(t *testing.T) (root, java string) {
	root = filepath.Join(t.TempDir(), "jdk-21")
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "release"), []byte("JAVA_VERSION=\"21.0.2\"\n"), 0o644))
	java = filepath.Join(root, "bin", "java")
	copyFile(t, "/bin/true", java)
	root, err := filepath.EvalSymlinks(root)
	must(t, err)
	return root, filepath.Join(root, "bin", "java")
}

// TestToolchainInIdentity: a program in a toolchain layout gets the
// toolchain's root read-only (in place of its own directory) and its
// variables, and the identity names the toolchain; the approval request
// carries it and the fingerprint covers it. A variable the operator
// declared keeps the operator's value and is not the toolchain's.
func TestToolchainInIdentity(t *testing.T) {
	root, java := jdkTree(t)
	r := newRig(t)
	req := r.request()
	req.Executable, req.Argv = java, []string{"-version"}
	res, err := r.b.admit.Resolve(&wire.Submit{Workspace: r.workspace, Request: req})
	must(t, err)
	t.Cleanup(res.Close)
	id := res.Identity()
	tc := id.Toolchain
	if tc == nil || tc.Kind != wire.ToolchainJDK || tc.Name != "21.0.2" || tc.Root != root || !slices.Equal(tc.Vars, []string{"JAVA_HOME"}) {
		t.Fatalf("toolchain %+v, want jdk 21.0.2 at %s setting JAVA_HOME", tc, root)
	}
	if !slices.Contains(id.Policy.ReadExec, root) || slices.Contains(id.Policy.ReadExec, filepath.Dir(java)) {
		t.Errorf("read paths %q: want %s, not its bin/", id.Policy.ReadExec, root)
	}
	if slices.Contains(id.Policy.ReadWrite, root) {
		t.Errorf("the toolchain's root is writable: %q", id.Policy.ReadWrite)
	}
	if !slices.Contains(id.Env, wire.EnvVar{Name: "JAVA_HOME", Value: root}) || !slices.IsSortedFunc(id.Env, func(a, b wire.EnvVar) int {
		return bytes.Compare([]byte(a.Name), []byte(b.Name))
	}) {
		t.Errorf("env %v: want JAVA_HOME=%s, sorted", id.Env, root)
	}
	fp, err := identity.Fingerprint(id)
	must(t, err)
	if !bytes.Equal(fp, res.Fingerprint()) {
		t.Fatal("the fingerprint is not the identity's")
	}
	other := *id
	other.Toolchain = &wire.Toolchain{Kind: tc.Kind, Name: "21.0.3", Root: tc.Root, Vars: tc.Vars}
	if fp2, _ := identity.Fingerprint(&other); bytes.Equal(fp, fp2) {
		t.Fatal("the fingerprint does not cover the toolchain")
	}
	v := r.wantApproval(req)
	if v.Identity.Toolchain == nil || v.Identity.Toolchain.Root != tc.Root {
		t.Fatalf("the approval request carries toolchain %+v", v.Identity.Toolchain)
	}

	declared := newRig(t, func(c *Config) { c.Env = []string{"JAVA_HOME=/opt/mine"} })
	res, err = declared.b.admit.Resolve(&wire.Submit{Workspace: declared.workspace, Request: req})
	must(t, err)
	t.Cleanup(res.Close)
	id = res.Identity()
	if id.Toolchain == nil || len(id.Toolchain.Vars) != 0 || !slices.Contains(id.Env, wire.EnvVar{Name: "JAVA_HOME", Value: "/opt/mine"}) {
		t.Fatalf("with JAVA_HOME declared: toolchain %+v, env %v", id.Toolchain, id.Env)
	}
}

// TestToolchainLeftOut: a program in no layout, and a workspace
// executable whatever it leads to, get no toolchain: the identity is as
// it was before discovery.
func TestToolchainLeftOut(t *testing.T) {
	r := newRig(t)
	res, err := r.b.admit.Resolve(&wire.Submit{Workspace: r.workspace, Request: r.request()})
	must(t, err)
	t.Cleanup(res.Close)
	if res.Identity().Toolchain != nil {
		t.Fatalf("%s: toolchain %+v", r.tool, res.Identity().Toolchain)
	}
	_, java := jdkTree(t)
	must(t, os.Symlink(java, filepath.Join(r.workspace, "sub", "java")))
	req := r.request()
	req.Executable, req.Cwd = "./sub/java", "."
	_, err = r.b.admit.Resolve(&wire.Submit{Workspace: r.workspace, Request: req})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodePathInvalid {
		t.Fatalf("a workspace link to a JDK outside the read paths: %v, want PATH_INVALID", err)
	}
}
