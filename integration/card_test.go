//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"warrant/wire"
)

// TestApprovalCardFits is issue 33's reproduction: a real daemon on a
// state directory named as an operator would (its decide commands carry
// it), `git status` submitted in a fresh repository in a mktemp
// directory, and `broker approvals` off a terminal: the card fits in 20
// rows of 80 columns and names what limits the action; --full holds the
// whole limitations text. `broker run --approve` prints the same card.
func TestApprovalCardFits(t *testing.T) {
	tmp := func(pattern string) string {
		dir, err := os.MkdirTemp("", pattern)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	state, ws := tmp("sc"), tmp("tmp.")
	if out, err := exec.Command("/usr/bin/git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	d := startBroker(t, filepath.Join(state, "s"))
	s, err := d.dial().Submit(ws, wire.ActionRequest{Executable: "git", Argv: []string{"status"}, Cwd: ".", Profile: wire.ProfileShort})
	if err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v %v", s, err)
	}
	id := s.Approval.ID
	card, code := d.CLI("approvals")
	t.Logf("broker approvals:\n%s", card)
	if code != 0 {
		t.Fatalf("broker approvals: exit %d", code)
	}
	fitsIn20x80(t, card)
	for _, want := range []string{"━━ " + id + " ━━ goal default rev 1", "command      git status", "executable   /usr/bin/git sha256 ",
		`where        profile short, cwd "." in ` + ws, "runs as      uid ", "no network", "may read     /usr", "may write    the workspace",
		"protected    ", "limits       10s wall, 10 s CPU", "broker approve " + id + " --state " + d.State, "broker deny " + id + " --state " + d.State,
		"broker approvals --full --state " + d.State} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %q", want)
		}
	}
	full, _ := d.CLI("approvals", "--full")
	for line := range strings.SplitSeq(s.Approval.Limitations, "\n") {
		if !strings.Contains(full, " "+line+"\n") {
			t.Errorf("broker approvals --full lacks the limitations line %q:\n%s", line, full)
		}
	}

	_, stderr, code := cliRun(t, ws, nil, "run", "--state", d.State, "--approve", "--", "git", "status")
	printed, _, ok := strings.Cut(stderr, "warrant: --approve granted")
	if code != 0 || !ok || !strings.Contains(printed, "command      git status") {
		t.Fatalf("broker run --approve: exit %d:\n%s", code, stderr)
	}
	fitsIn20x80(t, printed)
}

// TestApprovalCardQuotesTheRequest is the reviewer's reproduction on a
// real daemon: a workspace whose name holds a right-to-left override and
// an escape sequence that hides what follows, a script in it whose name
// erases the row above and prints a fake command row, run from a
// directory whose name does the same, with an argument that does too.
// Neither `broker approvals` nor its --full card lets a byte of them
// reach the terminal as is; each is shown quoted.
func TestApprovalCardQuotesTheRequest(t *testing.T) {
	const esc = "\x1b[1A\x1b[2K  command      go test all\x1b[8m" // a file name holds no '/'
	ws := filepath.Join(t.TempDir(), "w\u202eskrow\x1b[8m")
	tool, cwd := "x"+esc, "sub"+esc+"\u202e"
	if err := os.MkdirAll(filepath.Join(ws, cwd), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, tool), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := startBroker(t, "")
	s, err := d.dial().Submit(ws, wire.ActionRequest{Executable: "./" + tool, Argv: []string{"a" + esc, "\u202egpj.exe"}, Cwd: cwd,
		Profile: wire.ProfileShort})
	if err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v %v", s, err)
	}
	for _, args := range [][]string{{"approvals"}, {"approvals", "--full"}, {"approvals", "--debug"}} {
		out, code := d.CLI(args...)
		if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && !unicode.IsPrint(r) }); code != 0 || i >= 0 {
			t.Errorf("broker %s: exit %d, a byte of the request reaches the terminal as is at %d:\n%q", strings.Join(args, " "), code, i, out)
			continue // not printed as is here either
		}
		t.Logf("broker %s:\n%s", strings.Join(args, " "), out)
		if strings.Count(out, "\n  command ") != 1 || !strings.Contains(out, `\x1b[1A`) || !strings.Contains(out, `\u202e`) {
			t.Errorf("broker %s does not show the names quoted:\n%s", strings.Join(args, " "), out)
		}
	}
}

// fitsIn20x80 fails t unless card has at most 20 rows, its blank last
// one included, none wider than 80 columns.
func fitsIn20x80(t *testing.T, card string) {
	t.Helper()
	rows := strings.Split(strings.TrimSuffix(card, "\n"), "\n")
	if len(rows) > 20 {
		t.Errorf("%d rows, want at most 20:\n%s", len(rows), card)
	}
	for _, r := range rows {
		if n := utf8.RuneCountInString(r); n > 80 {
			t.Errorf("a row of %d columns: %q", n, r)
		}
	}
}
