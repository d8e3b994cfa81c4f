//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret = "secret-bytes-0451"

// writeFile creates a host file and returns its path.
func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// unchanged requires path to still hold content.
func unchanged(t *testing.T, path, content string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != content {
		t.Fatalf("%s changed: %q, %v", path, got, err)
	}
}

func TestLauncherFilesystem(t *testing.T) {
	a := newAction(t)
	outsideFile := writeFile(t, filepath.Join(a.Outside, "victim"), "original")
	secretFile := writeFile(t, filepath.Join(a.Outside, "secret"), secret)
	if err := os.Symlink(secretFile, a.Path("sym-abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../"+filepath.Base(a.Outside)+"/secret", a.Path("sym-rel")); err != nil {
		t.Fatal(err)
	}
	// A read-only directory: granted read+execute by the policy.
	ro := t.TempDir()
	roFile := writeFile(t, filepath.Join(ro, "ro"), "read-only content")

	cases := []struct {
		name, want string
		args       []string
	}{
		{"write outside", "errno EACCES", []string{"write", outsideFile, "evil"}},
		{"create outside", "errno EACCES", []string{"write", filepath.Join(a.Outside, "new"), "evil"}},
		{"read secret", "errno EACCES", []string{"read", secretFile}},
		{"absolute symlink escape", "errno EACCES", []string{"read", "sym-abs"}},
		{"relative symlink escape", "errno EACCES", []string{"read", "sym-rel"}},
		{"write through symlink", "errno EACCES", []string{"write", "sym-abs", "evil"}},
		{"hardlink escape", "errno EXDEV", []string{"link", secretFile, "hard"}},
		{"truncate read-only", "errno EACCES", []string{"truncate", roFile}},
		{"write read-only", "errno EACCES", []string{"write", roFile, "evil"}},
		{"read read-only", "ok\nread-only content", []string{"read", roFile}},
		{"write home", "ok", []string{"write", filepath.Join(a.Home, "h"), "home"}},
		{"write tmp", "ok", []string{"write", filepath.Join(a.Tmp, "t"), "tmp"}},
	}
	for _, c := range cases {
		req := a.Helper(c.args...)
		grant(t, req, ro)
		r := a.Run(req)
		r.Ready(t)
		if got := strings.TrimSpace(r.Stdout); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if strings.Contains(r.Stdout+r.Stderr, secret) {
			t.Errorf("%s: the secret reached the output", c.name)
		}
	}
	unchanged(t, outsideFile, "original")
	unchanged(t, secretFile, secret)
	unchanged(t, roFile, "read-only content")
	for _, p := range []string{filepath.Join(a.Outside, "new"), a.Path("hard")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created", p)
		}
	}
	unchanged(t, filepath.Join(a.Home, "h"), "home")
	unchanged(t, filepath.Join(a.Tmp, "t"), "tmp")
}

// A setuid-root program executed by the target gains no capability.
func TestLauncherSetuidGainsNothing(t *testing.T) {
	a := newAction(t)
	suid := a.Path("suid-helper")
	copyExecutable(t, bins.helper, suid)
	if err := os.Chmod(suid, 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	req := a.Helper("exec", suid, "status")
	grant(t, req, "/proc") // the target reads its own /proc/self/status
	r := a.Run(req)
	r.Ready(t)
	for _, name := range []string{"CapPrm", "CapEff", "CapBnd", "CapAmb", "CapInh"} {
		if got := statusField(t, r.Stdout, name); got != "0000000000000000" {
			t.Errorf("after exec of a setuid program %s = %s", name, got)
		}
	}
}
