package admission

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/broker/internal/protect"
	"warrant/wire"
)

// TestGitIdentityRead: the operator's identity is read as git finds it
// (XDG then ~/.gitconfig, a later value winning; $GIT_CONFIG_GLOBAL
// alone), and nothing that git would refuse, that holds more than one
// line's worth, or that an include would add is taken.
func TestGitIdentityRead(t *testing.T) {
	const ada = "[user]\n\tname = Ada\n\temail = ada@example.org\n"
	for _, c := range []struct {
		name        string
		xdg, global string // files; "" absent
		environ     func(home, xdg string) []string
		want        *wire.GitIdentity
		why         string
	}{
		{name: "none"},
		{name: "home", global: ada, want: &wire.GitIdentity{Name: "Ada", Email: "ada@example.org"}},
		{name: "xdg then home", xdg: "[user]\n\tname = X\n\temail = x@example.org\n", global: "[user]\n\temail = ada@example.org\n",
			want: &wire.GitIdentity{Name: "X", Email: "ada@example.org"}},
		{name: "xdg_config_home", xdg: ada, environ: func(home, xdg string) []string { return []string{"HOME=" + home, "XDG_CONFIG_HOME=" + xdg} },
			want: &wire.GitIdentity{Name: "Ada", Email: "ada@example.org"}},
		{name: "git_config_global alone", xdg: ada, global: ada,
			environ: func(home, xdg string) []string { return []string{"HOME=" + home, "GIT_CONFIG_GLOBAL=/nonexistent"} }},
		{name: "git's grammar", global: "# c\n[User]\n\tNAME = \"Ada \\\"the\\\" Countess\" ; comment\n[user \"sub\"]\n\tname = no\n[user]\n\temail=ada@example.org\n",
			want: &wire.GitIdentity{Name: `Ada "the" Countess`, Email: "ada@example.org"}},
		{name: "other keys ignored", global: ada + "[alias]\n\tx = !evil\n[core]\n\tfsmonitor = /evil\n",
			want: &wire.GitIdentity{Name: "Ada", Email: "ada@example.org"}},
		{name: "include not followed", global: "[include]\n\tpath = ~/.inc\n", xdg: ""},
		{name: "a line git refuses", global: ada + "[broken\n", why: "a line git would refuse"},
		{name: "only a name", global: "[user]\n\tname = Ada\n", why: "only one of user.name and user.email"},
		{name: "a newline in the value", global: "[user]\n\tname = \"Ada\\n[alias]\"\n\temail = a@b\n", why: "control character"},
		{name: "angle brackets", global: "[user]\n\tname = Ada\n\temail = <a@b>\n", why: "'<' or '>'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			xdg := filepath.Join(home, ".config")
			if c.environ != nil {
				xdg = t.TempDir()
			}
			if c.xdg != "" {
				must(t, os.MkdirAll(filepath.Join(xdg, "git"), 0o700))
				must(t, os.WriteFile(filepath.Join(xdg, "git", "config"), []byte(c.xdg), 0o600))
			}
			if c.global != "" {
				must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(c.global), 0o600))
			}
			must(t, os.WriteFile(filepath.Join(home, ".inc"), []byte(ada), 0o600))
			environ := []string{"HOME=" + home}
			if c.environ != nil {
				environ = c.environ(home, xdg)
			}
			got, why := GitIdentity(environ)
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want || !strings.Contains(why, c.why) || c.why == "" && why != "" {
				t.Fatalf("got %+v (%q), want %+v (%q)", got, why, c.want, c.why)
			}
		})
	}
}

// FuzzGitConfigWritten: every identity wire.GitIdentity.Check accepts is
// written as a .gitconfig that git's grammar reads back as exactly that
// user.name and user.email, and nothing else.
func FuzzGitConfigWritten(f *testing.F) {
	f.Fuzz(func(t *testing.T, name, email string) {
		g := &wire.GitIdentity{Name: name, Email: email}
		if g.Check() != nil {
			return
		}
		var got []string
		if !protect.GitConfig([]byte(gitConfigOf(g)), func(key, value string, set bool) {
			got = append(got, fmt.Sprintf("%s=%s %v", key, value, set))
		}) {
			t.Fatalf("git would refuse %q", gitConfigOf(g))
		}
		want := []string{"user.name=" + name + " true", "user.email=" + email + " true"}
		if !slices.Equal(got, want) {
			t.Fatalf("%q reads back as %q, want %q", gitConfigOf(g), got, want)
		}
	})
}
