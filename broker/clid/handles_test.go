package clid

import (
	"bytes"
	"strings"
	"testing"

	"warrant/broker/cli"
)

// `broker status` without a handle reads the stored capability; with one
// it asks the daemon; with more it is a usage error. The flag set alone
// decides which arguments are positional.
func TestStatusArguments(t *testing.T) {
	state := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"status", "--state", state}, 0, "capability: unverified"},
		{[]string{"status", "--json", "--state", state}, 0, `"state": "unverified"`},
		{[]string{"status", "--state=" + state, "--json=false"}, 0, "capability: unverified"},
		{[]string{"status", "--state", state, "a-1"}, cli.ExitFailed, "no broker is running on the state directory " + state},
		{[]string{"status", "a-1", "b-2", "--state", state}, 2, `unexpected argument "b-2"`},
		{[]string{"status", "--state"}, 2, "--state needs a value"},
	} {
		var out bytes.Buffer
		if code := Main(c.args, &out, &out); code != c.code || !strings.Contains(out.String(), c.want) {
			t.Errorf("broker %s: exit %d, want %d with %q:\n%s", strings.Join(c.args, " "), code, c.code, c.want, out.String())
		}
	}
}

// `broker run` splits at its first "--": a command that itself holds "--"
// (git diff -- FILE) is the command's, not a stray argument of run's.
func TestRunSplitsAtTheFirstDoubleDash(t *testing.T) {
	t.Setenv("WARRANT_STATE", t.TempDir())
	t.Setenv("WARRANT_LAUNCHER", "/nonexistent/launcher")
	for _, args := range [][]string{
		{"run", "--", "git", "diff", "--", "f"},
		{"run", "--profile", "short", "--", "git", "diff", "--", "f"},
	} {
		var out bytes.Buffer
		code := Main(args, &out, &out)
		if code == 2 || !strings.Contains(out.String(), "/nonexistent/launcher") {
			t.Errorf("broker %s: exit %d; want it past argument parsing, stopped at the missing launcher:\n%s",
				strings.Join(args, " "), code, out.String())
		}
	}
	var out bytes.Buffer
	if code := Main([]string{"run", "--profile", "short", "--"}, &out, &out); code != 125 ||
		!strings.Contains(out.String(), "put the command after --") {
		t.Errorf("run without a command: exit %d\n%s", code, out.String())
	}
}
