package view

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestPlainQuotesWhatDoesNotPrint: Plain leaves a name that prints as
// itself (spaces, quotes, accents, wide runes) and quotes one holding a
// control, format (bidi), line or paragraph separator rune, or a byte of
// invalid UTF-8, so that what it gives prints as itself.
func TestPlainQuotesWhatDoesNotPrint(t *testing.T) {
	for _, s := range []string{"/usr/local/go", "/home/josé/my project", `a "b" \c`, "/src/漢字", "↩"} {
		if got := Plain(s); got != s {
			t.Errorf("Plain(%q) = %s, want it as is", s, got)
		}
	}
	for _, s := range []string{"\x1b[2K", "a\x7f", "\u009b2K", "\u202e", "\u2066", "\u200b", "\ufeff", "\u00ad", "\u2028", "\u2029", "\u00a0", "x\xff"} {
		got := Plain(s)
		if !strings.HasPrefix(got, `"`) || strings.ContainsFunc(got, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }) {
			t.Errorf("Plain(%q) = %q, want it quoted", s, got)
		}
	}
}

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
