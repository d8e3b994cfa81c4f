//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// The operator's git configuration, as a user's ~/.gitconfig may be:
// an identity, and keys that run programs or change what git does.
const (
	operatorName  = "Operator Name"
	operatorEmail = "operator@example.invalid"
	operatorGit   = "[user]\n\tname = " + operatorName + "\n\temail = " + operatorEmail + "\n\tsigningkey = ABCDEF\n" +
		"[alias]\n\tx = !evil\n[core]\n\tfsmonitor = /tmp/evil-fsmonitor\n\thooksPath = /tmp/evil-hooks\n" +
		"[include]\n\tpath = /tmp/evil-include\n[commit]\n\tgpgsign = true\n"
)

// gitIdentityCheck commits in a fresh repository of w's workspace (no
// local identity, no -c) and checks, from the host, that the commit's
// author and committer are the operator's; and, inside, that the action's
// HOME gives git the operator's user.name and user.email and nothing else.
func gitIdentityCheck(t *testing.T, w *workbench) {
	lookPath(t, "git")
	mark := token(t)
	writeTree(t, w.WS, map[string]string{"hello.txt": "hello " + mark + "\n"})
	w.ready()
	w.step(t, wire.ProfileShort, "git", "init", "-q", "-b", "main")
	w.step(t, wire.ProfileShort, "git", "add", "hello.txt")
	w.step(t, wire.ProfileShort, "git", "commit", "-q", "-m", "commit "+mark)
	want := operatorName + " <" + operatorEmail + ">|" + operatorName + " <" + operatorEmail + ">\n"
	if got := hostGit(t, w.WS, "log", "--format=%an <%ae>|%cn <%ce>"); got != want {
		t.Fatalf("host: the commit's author|committer is %q, want %q", got, want)
	}
	j, _ := w.step(t, wire.ProfileShort, "git", "config", "--global", "--list", "--show-origin")
	lines := strings.Split(strings.TrimSuffix(j.Stdout.Text, "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "/.gitconfig\tuser.name="+operatorName) ||
		!strings.HasSuffix(lines[1], "/.gitconfig\tuser.email="+operatorEmail) {
		t.Fatalf("the action's global git config holds more or less than the operator's identity:\n%s", j.Stdout.Text)
	}
	j, _ = w.step(t, wire.ProfileShort, "git", "config", "--list", "--show-origin")
	for _, l := range strings.Split(strings.TrimSuffix(j.Stdout.Text, "\n"), "\n") {
		origin, kv, _ := strings.Cut(l, "\t")
		if origin == "file:.git/config" || origin == "file:/etc/gitconfig" ||
			kv == "user.name="+operatorName || kv == "user.email="+operatorEmail {
			continue
		}
		t.Errorf("git config inside the action has %q from %s", kv, origin)
	}
}

// TestBrokerGitIdentity: as root, against a broker serve whose HOME holds
// the operator's ~/.gitconfig.
func TestBrokerGitIdentity(t *testing.T) {
	home := t.TempDir()
	writeTree(t, home, map[string]string{".gitconfig": operatorGit})
	d := startOperatorBrokerEnv(t, []string{"HOME=" + home, "XDG_CONFIG_HOME="})
	gitIdentityCheck(t, rootBench(t, d))

	// The card says it.
	a := d.newAgent(t)
	if s, err := a.cl.Submit(a.WS, a.request(wire.ProfileShort, "git", "status")); err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v %v", s, err)
	}
	card, _ := d.CLI("approvals")
	if want := "git identity " + operatorName + " <" + operatorEmail + ">"; !strings.Contains(card, want) {
		t.Fatalf("the card lacks %q:\n%s", want, card)
	}
}

// TestBrokerGitIdentityAsUser: as uid 65534, whose own HOME holds the
// ~/.gitconfig, with its embedded broker.
func TestBrokerGitIdentityAsUser(t *testing.T) {
	w := userBench(t)
	u := asNobodyHome(t, w)
	writeTree(t, u, map[string]string{".gitconfig": operatorGit})
	gitIdentityCheck(t, w)
}

// asNobodyHome is the HOME of w's uid 65534 (its workspace's parent).
func asNobodyHome(t *testing.T, w *workbench) string {
	t.Helper()
	if !w.User {
		t.Fatal("not uid 65534's workbench")
	}
	return filepath.Dir(w.WS)
}

// startOperatorBrokerEnv is startOperatorBroker with env added to the
// broker's environment (a later NAME= takes the place of an earlier one).
func startOperatorBrokerEnv(t *testing.T, env []string, flags ...string) *brokerd {
	t.Helper()
	return serveWith(t, filepath.Join(t.TempDir(), "state"), env, flags...)
}
