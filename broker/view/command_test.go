package view

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestCommandLineRoundTrips: a command line pasted into a shell gives back
// the same argv, and no control byte of it reaches the terminal as is.
func TestCommandLineRoundTrips(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("skip: no bash to read the quoted words back")
	}
	argv := []string{"plain", "a b", "it's", "", "$(rm -rf ~)", "line\nbreak", "tab\there", "esc\x1b[31m", "ünï", "bad\xffbyte", `back\slash`}
	line := CommandLine("printf", append([]string{`%s\0`}, argv...))
	if strings.ContainsAny(line, "\n\t\x1b") || strings.Contains(line, "\xff") {
		t.Fatalf("control bytes reach the terminal: %q", line)
	}
	out, err := exec.Command(bash, "-c", line).Output()
	if err != nil {
		t.Fatalf("bash -c %q: %v", line, err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, argv) {
		t.Errorf("%s\nreads back as %q, want %q", line, got, argv)
	}
}
