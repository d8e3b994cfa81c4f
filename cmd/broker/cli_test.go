package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warrant/wire"
)

// TestCLIApprovalFlow drives a real production `broker serve` with the
// CLI: the approval card, approve, leases --json, and the refusal a
// broker without a launcher gives (nothing is consumed).
func TestCLIApprovalFlow(t *testing.T) {
	bin := buildBroker(t)
	dir := t.TempDir()
	state, ws := filepath.Join(dir, "state"), filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, bin, state, "")
	defer d.kill(t)
	cl := dialRetry(t, state)
	defer cl.Close()
	req := wire.ActionRequest{Executable: "true", Argv: []string{"a; b", "x\ny"}, Cwd: ".", Profile: wire.ProfileShort}
	s, err := cl.Submit(ws, req)
	if err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v %v", s, err)
	}
	run := func(args ...string) string {
		out, err := exec.Command(bin, append(args, "--state", state)...).CombinedOutput()
		if err != nil {
			t.Fatalf("broker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	card := run("approvals")
	for _, want := range []string{s.Approval.ID, `[1] "a; b"`, `[2] "x\ny"`, "resolved", "sha256", "No network", "Runs as your user"} {
		if !strings.Contains(card, want) {
			t.Fatalf("approval card lacks %q:\n%s", want, card)
		}
	}
	run("approve", s.Approval.ID, "--uses", "2", "--ttl", "10m")
	var leases []wire.LeaseView
	if err := json.Unmarshal([]byte(run("leases", "--json")), &leases); err != nil || len(leases) != 1 || leases[0].UsesLeft != 2 {
		t.Fatalf("leases --json: %+v %v", leases, err)
	}
	_, err = cl.Submit(ws, req)
	if we, ok := err.(*wire.Error); !ok || we.Code != wire.CodeSandboxUnavailable {
		t.Fatalf("submit without a launcher: %v", err)
	}
	if err := json.Unmarshal([]byte(run("leases", "--json")), &leases); err != nil || leases[0].UsesLeft != 2 {
		t.Fatalf("a refused submit consumed a use: %+v %v", leases, err)
	}
	if out := run("actions", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("actions recorded without a launcher: %s", out)
	}
}
