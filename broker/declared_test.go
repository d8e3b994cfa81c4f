package broker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/broker/internal/identity"
)

// withEnvFile writes content to the rig's <state>/env (mode perm) before
// its broker opens.
func withEnvFile(t *testing.T, content string, perm os.FileMode) func(*Config) {
	return func(c *Config) {
		must(t, os.MkdirAll(c.StateDir, 0o700))
		p := filepath.Join(c.StateDir, "env")
		must(t, os.WriteFile(p, []byte(content), perm))
		must(t, os.Chmod(p, perm))
	}
}

// TestDeclaredEnvironmentInIdentity: the operator's declared variables —
// from <state>/env (comments and empty lines ignored, the value taken byte
// for byte) and from --env, which takes the place of the file's value —
// are in the identity, so the approval card shows them and the
// fingerprint covers their values; the broker's own environment still
// gives nothing but LANG, LC_* and TZ.
func TestDeclaredEnvironmentInIdentity(t *testing.T) {
	file := "# toolchains\n\nJAVA_HOME=/opt/jdk 21\nGOROOT=/from/the/file\n   \nGOFLAGS=-mod=mod -trimpath\n"
	r := newRig(t, withEnvFile(t, file, 0o600), func(c *Config) {
		c.Env = []string{"GOROOT=/usr/local/go", "GOTELEMETRY=off"}
		c.Environ = append(c.Environ, "RUSTUP_HOME=/inherited/never")
	})
	id := r.resolved().Identity()
	got := map[string]string{}
	for _, kv := range id.Env {
		got[kv.Name] = kv.Value
	}
	want := map[string]string{"JAVA_HOME": "/opt/jdk 21", "GOROOT": "/usr/local/go", "GOFLAGS": "-mod=mod -trimpath", "GOTELEMETRY": "off", "LANG": "C.UTF-8"}
	for n, v := range want {
		if got[n] != v {
			t.Errorf("%s=%q, want %q", n, got[n], v)
		}
	}
	if _, ok := got["RUSTUP_HOME"]; ok {
		t.Error("a variable of the broker's own environment reached the identity")
	}
	fp, err := identity.Fingerprint(id)
	must(t, err)
	changed := *id
	changed.Env = append(changed.Env[:0:0], id.Env...)
	for i := range changed.Env {
		if changed.Env[i].Name == "GOROOT" {
			changed.Env[i].Value = "/elsewhere"
		}
	}
	other, err := identity.Fingerprint(&changed)
	must(t, err)
	if bytes.Equal(fp, other) {
		t.Fatal("the fingerprint does not cover a declared value")
	}
	v := r.wantApproval(r.request())
	for _, kv := range v.Identity.Env {
		if kv.Name == "JAVA_HOME" && kv.Value == "/opt/jdk 21" {
			return
		}
	}
	t.Fatalf("the approval request does not carry JAVA_HOME's value: %+v", v.Identity.Env)
}

// TestDeclaredEnvironmentRefusedAtStart: a declared name that looks like a
// credential, is read by the loader, is fixed by warrant or set by the
// workspace cache, and every malformed line of <state>/env (named by its
// number) or unsafe env file, stops the broker with a sentence.
func TestDeclaredEnvironmentRefusedAtStart(t *testing.T) {
	open := func(flags []string, file string, perm os.FileMode) error {
		state := filepath.Join(t.TempDir(), "state")
		if file != "" {
			withEnvFile(t, file, perm)(&Config{StateDir: state})
		}
		b, err := Open(context.Background(), Config{StateDir: state, Env: flags})
		if err == nil {
			b.Close()
		}
		return err
	}
	for _, c := range []struct {
		flags []string
		file  string
		perm  os.FileMode
		want  string
	}{
		{flags: []string{"GITHUB_TOKEN=x"}, want: "looks like a credential"},
		{flags: []string{"OPENAI_API_KEY=x"}, want: "looks like a credential"},
		{flags: []string{"AWS_PROFILE=dev"}, want: "looks like a credential"},
		{flags: []string{"DB_PASSWORD=x"}, want: "looks like a credential"},
		{flags: []string{"LD_PRELOAD=/x.so"}, want: "dynamic loader"},
		{flags: []string{"PATH=/tmp"}, want: "fixed by warrant"},
		{flags: []string{"GOCACHE=/tmp/c"}, want: "set by the workspace cache"},
		{flags: []string{"CARGO_TARGET_DIR=/tmp/t"}, want: "--cargo-target-cache"},
		{flags: []string{"GOROOT"}, want: "want NAME=VALUE"},
		{flags: []string{"A=1", "A=2"}, want: "given twice"},
		{file: "GOROOT=/x\nBAD NAME=1\n", perm: 0o600, want: "env line 2:"},
		{file: "just words\n", perm: 0o600, want: "env line 1: want NAME=VALUE"},
		{file: "X=1\r\n", perm: 0o600, want: "carriage return"},
		{file: "X=1\nX=2\n", perm: 0o600, want: "line 2: X is declared already on line 1"},
		{file: "# ok\nSSH_AUTH_SOCK=/tmp/agent\n", perm: 0o600, want: "line 2: SSH_AUTH_SOCK is refused"},
		{file: "X=1\n", perm: 0o620, want: "writable by others"},
	} {
		err := open(c.flags, c.file, c.perm)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("flags %q, file %q: %v; want an error with %q", c.flags, c.file, err, c.want)
		}
	}
	state := filepath.Join(t.TempDir(), "state")
	must(t, os.MkdirAll(state, 0o700))
	must(t, os.Symlink("/etc/hostname", filepath.Join(state, "env")))
	if _, err := Open(context.Background(), Config{StateDir: state}); err == nil || !strings.Contains(err.Error(), "declared environment") {
		t.Errorf("a symlinked env file: %v", err)
	}
}
