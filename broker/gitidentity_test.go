package broker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"warrant/broker/internal/identity"
	"warrant/broker/runner"
	"warrant/wire"
)

// homeReader is an executor that keeps what each launch's HOME/.gitconfig
// holds (or the error reading it) and starts nothing.
type homeReader struct {
	holdExecutor
	gitconfig []string
}

func (h *homeReader) Start(ctx context.Context, l *runner.Launch, o runner.Observer) error {
	b, err := os.ReadFile(filepath.Join(l.Home, ".gitconfig"))
	if err != nil {
		b = []byte(err.Error())
	}
	h.mu.Lock()
	h.gitconfig = append(h.gitconfig, string(b))
	h.mu.Unlock()
	return h.holdExecutor.Start(ctx, l, o)
}

// TestGitIdentityInIdentityAndHome: the operator's identity is in the
// request's identity (the card shows it, the fingerprint covers it), and
// the action's HOME/.gitconfig holds exactly it.
func TestGitIdentityInIdentityAndHome(t *testing.T) {
	home := t.TempDir()
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"),
		[]byte("[user]\n\tname = Ada \"Q\" Lovelace\\\\\n\temail = ada@example.org\n[alias]\n\tx = !evil\n"), 0o600))
	h := &homeReader{}
	r := newRig(t, func(c *Config) {
		c.Environ = append(c.Environ, "HOME="+home)
		c.Executor = h
	})
	v, _ := r.approved(r.request(), 1)
	want := wire.GitIdentity{Name: `Ada Q Lovelace\`, Email: "ada@example.org"}
	if g := v.Identity.GitIdentity; g == nil || *g != want {
		t.Fatalf("the request's git identity is %+v, want %+v", g, want)
	}
	fp, err := identity.Fingerprint(&v.Identity)
	must(t, err)
	if !bytes.Equal(fp, v.Fingerprint) {
		t.Fatal("the fingerprint does not cover the identity shown")
	}
	r.wantAccepted(r.request())
	wantFile := "[user]\n\tname = \"Ada Q Lovelace\\\\\"\n\temail = \"ada@example.org\"\n"
	if len(h.gitconfig) != 1 || h.gitconfig[0] != wantFile {
		t.Fatalf("the action's HOME/.gitconfig holds %q, want %q", h.gitconfig, wantFile)
	}
}
