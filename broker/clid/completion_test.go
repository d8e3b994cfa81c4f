package clid

import (
	"bytes"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// script is `broker completion SHELL`.
func script(t *testing.T, shell string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main([]string{"completion", shell}, &out, &errb); code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, errb.String())
	}
	return out.String()
}

// The bash script, run by a real bash, completes commands, subcommands
// and flags as the command table names them, and programs after `--`.
func TestBashCompletionCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("skip: no bash on this host: %v", err)
	}
	s := script(t, "bash")
	for _, c := range []struct {
		words string
		want  []string
	}{
		{"broker rec", []string{"receipts"}},
		{"broker re", []string{"receipts", "resolve", "revoke"}},
		{"broker receipts ve", []string{"verify"}},
		{"broker caches ", []string{"list", "prune"}},
		{"broker run --pro", []string{"--profile"}},
		{"broker approve ar-1 --", []string{"--binding", "--debug", "--egress", "--json", "--state", "--ttl", "--uses"}},
		{"broker receipts verify --p", []string{"--pubkey"}},
		{"broker run --approve -- /bin/tru", []string{"/bin/true"}},
	} {
		words := strings.Split(c.words, " ")
		prog := s + "\nCOMP_WORDS=(" + quoteAll(words) + "); COMP_CWORD=" + strconv.Itoa(len(words)-1) + "; _broker; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.words, err, out)
		}
		got := strings.Fields(string(out))
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: completions %q lack %q", c.words, got, w)
			}
		}
		if len(c.want) > 1 && len(got) != len(c.want) && !strings.HasPrefix(c.words, "broker run --approve --") {
			t.Errorf("%q: completions %q, want exactly %q", c.words, got, c.want)
		}
	}
}

// Every command of the table is in every shell's script, and each script
// parses in its shell where that shell is installed.
func TestCompletionScriptsNameEveryCommand(t *testing.T) {
	var help bytes.Buffer
	Main([]string{"help"}, &help, &help)
	var names []string // each usage line's command: "  broker NAME ..."
	for _, line := range strings.Split(help.String(), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 {
			names = append(names, f[1])
		}
	}
	if len(names) < 20 {
		t.Fatalf("broker help lists %d commands:\n%s", len(names), help.String())
	}
	for shell, check := range map[string][]string{"bash": {"-n"}, "zsh": {"-n"}, "fish": {"--no-execute"}} {
		s := script(t, shell)
		for _, name := range names {
			if !strings.Contains(s, name) {
				t.Errorf("%s: the script does not name %q", shell, name)
			}
		}
		bin, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s is not installed here: its script is checked for the command names only", shell)
			continue
		}
		cmd := exec.Command(bin, check...)
		cmd.Stdin = strings.NewReader(s)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s does not parse its script: %v\n%s", shell, err, out)
		}
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"completion", "tcsh"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "use bash, zsh or fish") {
		t.Fatalf("an unknown shell: exit %d: %s", code, errb.String())
	}
}

func quoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}
