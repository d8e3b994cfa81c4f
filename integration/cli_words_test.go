//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"warrant/wire"
)

// cliRun runs the real broker binary with args in dir and the launcher
// TestMain built, and returns its stdout, stderr and exit status.
func cliRun(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bins.broker, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher), env...)
	return outputs(t, cmd)
}

// outputs runs cmd and returns its stdout, stderr and exit status; only
// a failure to run it at all fails the test.
func outputs(t *testing.T, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// goChain matches the system's own account of a failure: a Go error
// chain naming the call that failed.
var goChain = regexp.MustCompile(`openat2 |lstat |dial unix |connect: |invalid value "|Usage of |too many levels of symbolic links|want \d+ argument\(s\)`)

// TestCLIRefusalsInTheUsersWords runs the real broker on each command
// line of issue 18 item 7 and checks the sentence a person reads: what is
// wrong and the fix, no Go error chain unless --debug asks for it (and
// then the chain is there), one short usage line for a usage error, the
// documented exit status, and no refusal headed by an outcome's name.
func TestCLIRefusalsInTheUsersWords(t *testing.T) {
	dir := t.TempDir()
	state, ws := filepath.Join(dir, "state"), filepath.Join(dir, "ws")
	for _, d := range []string{filepath.Join(ws, "sub"), filepath.Join(ws, "real")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("real", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	env := []string{"WARRANT_STATE=" + state}
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		want  string // in stderr
		chain string // in stderr with --debug only; "" for none
		usage bool   // a usage error: exactly one usage line
	}{
		{"cwd missing", []string{"run", "--approve", "--cwd", "nosuchdir", "--", "true"}, 125,
			`the cwd "nosuchdir" in the workspace ` + ws + ` does not exist; create it, or pass --cwd an existing directory`, "openat2 nosuchdir", false},
		{"cwd one symlink", []string{"run", "--approve", "--cwd", "link", "--", "true"}, 125,
			`the cwd "link" in the workspace ` + ws + ` is a symbolic link or has one on its way, and warrant follows none; pass --cwd the real directory`, "openat2 link", false},
		{"cwd unclean", []string{"run", "--approve", "--cwd", "sub//x", "--", "true"}, 125, `write it as "sub/x"`, "", false},
		{"cwd above", []string{"run", "--approve", "--cwd", "../", "--", "true"}, 125, `leaves the workspace`, "", false},
		{"cwd absolute", []string{"run", "--approve", "--cwd", "/tmp", "--", "true"}, 125, `is absolute; it must be relative to the workspace`, "", false},
		{"workspace missing", []string{"run", "--approve", "--workspace", filepath.Join(dir, "nope"), "--", "true"}, 125,
			"the workspace " + filepath.Join(dir, "nope") + " does not exist; pass an existing directory with --workspace DIR", "lstat ", false},
		{"workspace executable missing", []string{"run", "--approve", "--", "./nosuch"}, 127,
			`the workspace executable "./nosuch" does not exist beneath the workspace`, "", false},
		{"bad profile", []string{"run", "--profile", "fast", "--", "true"}, 125, `--profile must be short, standard or long, not "fast"`, "", true},
		{"no command", []string{"run", "--approve"}, 125, "put the command after --", "", true},
		{"ttl without unit", []string{"approve", "ar-1", "--ttl", "5"}, 2, "--ttl 5: give a duration with its unit, like 30s, 10m or 1h", "", true},
		{"unknown flag", []string{"approve", "ar-1", "--use", "2"}, 2, "there is no flag --use", "", true},
		{"missing argument", []string{"approve"}, 2, "broker approve: missing ID", "", true},
		{"extra argument", []string{"deny", "ar-1", "ar-2"}, 2, `unexpected argument "ar-2"`, "", true},
		{"no daemon", []string{"leases"}, 1,
			"no broker is running on the state directory " + state + "; start one with `broker serve --state " + state + "`", "dial unix ", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := cliRun(t, ws, env, c.args...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("broker %s: exit %d, want %d with %q:\n%s", strings.Join(c.args, " "), code, c.code, c.want, stderr)
			}
			if m := goChain.FindString(stderr); m != "" {
				t.Errorf("broker %s: without --debug the message carries the Go error chain %q:\n%s", strings.Join(c.args, " "), m, stderr)
			}
			if strings.Contains(stderr, "known_not_executed") {
				t.Errorf("broker %s: the refusal is headed by the outcome's name:\n%s", strings.Join(c.args, " "), stderr)
			}
			if n := strings.Count(stderr, "usage:"); c.usage && (n != 1 || strings.Count(stderr, "\n") != 2) {
				t.Errorf("broker %s: a usage error is the sentence and one usage line:\n%s", strings.Join(c.args, " "), stderr)
			}
			if c.chain == "" {
				return
			}
			debug := append([]string{c.args[0], "--debug"}, c.args[1:]...)
			_, stderr, code = cliRun(t, ws, env, debug...)
			if code != c.code || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "detail: ") || !strings.Contains(stderr, c.chain) {
				t.Errorf("broker %s: exit %d; want the sentence and, under --debug, the chain %q:\n%s", strings.Join(debug, " "), code, c.chain, stderr)
			}
		})
	}

	// "sub/", what shell completion types, names the directory sub: the
	// action runs there.
	out, stderr, code := cliRun(t, ws, env, "run", "--approve", "--json", "--cwd", "sub/", "--", "pwd")
	var a struct {
		Stdout struct{ Text string } `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil || code != 0 || a.Stdout.Text != filepath.Join(ws, "sub")+"\n" {
		t.Errorf("broker run --cwd sub/ -- pwd: exit %d, printed %q (%v), want %s\n%s", code, a.Stdout.Text, err, filepath.Join(ws, "sub"), stderr)
	}

	// Before anything is submitted, --json still answers with the one
	// object and its error.
	for _, args := range [][]string{
		{"run", "--json", "--profile", "fast", "--", "true"},
		{"run", "--json", "--launcher", filepath.Join(dir, "no-launcher"), "--", "true"},
	} {
		out, _, code := cliRun(t, ws, env, args...)
		var o struct {
			Outcome string      `json:"outcome"`
			Error   *wire.Error `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &o); err != nil || code != 125 || o.Outcome != "known_not_executed" || o.Error == nil {
			t.Errorf("broker %s: exit %d, stdout %q (%v); want exit 125 and one JSON object with the error", strings.Join(args, " "), code, out, err)
		}
	}

	// Help is help: printed on stdout, exit 0.
	for _, args := range [][]string{{"run", "--help"}, {"help", "run"}, {"help"}, {"-h"}, {"approve", "-h"}} {
		out, stderr, code := cliRun(t, ws, env, args...)
		if code != 0 || !strings.HasPrefix(out, "usage: broker") {
			t.Errorf("broker %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, stderr)
		}
	}
	out, _, _ = cliRun(t, ws, env, "run", "--help")
	for _, want := range []string{"short     wall time 10s", "standard  wall time 2m0s", "long      wall time 30m0s", "125 not executed"} {
		if !strings.Contains(out, want) {
			t.Errorf("broker run --help does not explain %q:\n%s", want, out)
		}
	}
}
