package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestPositionals: the names of positional arguments come from the
// synopsis, flags and their values left out.
func TestPositionals(t *testing.T) {
	for synopsis, want := range map[string][]string{
		"approve ID [--uses N] [--ttl D] [--binding B] [--json]": {"ID"},
		commands["approve"].synopsis:                             {"ID"},
		"resolve HANDLE success|failed|stop [--note N]":          {"HANDLE", "success|failed|stop"},
		"status [HANDLE] [--json]":                               {"HANDLE"},
		"receipts show ID [--json]":                              {"ID"},
		"caches prune --older-than D|--all [--json]":             nil,
		"run [flags] -- EXECUTABLE [ARG...]":                     {"EXECUTABLE", "ARG"},
	} {
		if got := positionals(synopsis); !slices.Equal(got, want) {
			t.Errorf("positionals(%q) = %q, want %q", synopsis, got, want)
		}
	}
}

// A command the thin client does not do itself, and `run` when no daemon
// answers, are brokerd's; with no brokerd beside this binary (the test
// binary has none) they fail closed, SANDBOX_UNAVAILABLE, in a sentence
// naming where it looked, and nothing on $PATH is run.
func TestHandOffWithoutBrokerdFailsClosed(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	state := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"serve", "--state", state}, ExitFailed},
		{[]string{"status", "--state", state}, ExitFailed},
		{[]string{"run", "--state", state, "--", "/bin/true"}, exitNotExecuted},
	} {
		var out bytes.Buffer
		code := Main(c.args, &out, &out)
		if code != c.code || !strings.Contains(out.String(), "SANDBOX_UNAVAILABLE") || !strings.Contains(out.String(), "needs brokerd, and there is none to run at ") {
			t.Errorf("broker %s: exit %d, want %d:\n%s", strings.Join(c.args, " "), code, c.code, out.String())
		}
	}
}
