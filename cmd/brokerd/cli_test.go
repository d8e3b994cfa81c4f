package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/broker/view"
	"warrant/wire"
)

// TestCLIApprovalFlow drives a real production `broker serve` with the
// CLI: the approval card, approve, leases --json, then one run through the
// real launcher that consumes exactly one use and is listed.
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
	joined := strings.ReplaceAll(card, " \\\n      ", " ") // a long command continues on the next row
	for _, want := range []string{s.Approval.ID, `command      true 'a; b' $'x\ny'`, "/usr/bin/true sha256", "no network", "runs as      uid ",
		"broker approve " + s.Approval.ID + " --state " + state} {
		if !strings.Contains(joined, want) {
			t.Fatalf("approval card lacks %q:\n%s", want, card)
		}
	}
	full := run("approvals", "--full")
	for _, want := range []string{`[1] "a; b"`, `[2] "x\ny"`, "fingerprint", "policy       sha256", " ino ", "ctime"} {
		if !strings.Contains(full, want) || strings.Contains(card, want) {
			t.Fatalf("only the --full card should show %q:\n%s", want, full)
		}
	}
	run("approve", s.Approval.ID, "--uses", "2", "--ttl", "10m")
	var leases view.List[view.Lease]
	if err := json.Unmarshal([]byte(run("leases", "--json")), &leases); err != nil || len(leases.Items) != 1 || leases.Items[0].UsesLeft != 2 {
		t.Fatalf("leases --json: %+v %v", leases, err)
	}
	s, err = cl.Submit(ws, req)
	if err != nil || s.Handle == "" {
		t.Fatalf("submit with a lease: %+v %v", s, err)
	}
	st, _, err := cl.Wait(s.Handle, time.Minute)
	if err != nil || st == nil || st.Result == nil || st.Result.Outcome != wire.Exited || *st.Result.ExitCode != 0 {
		t.Fatalf("wait: %+v %v", st, err)
	}
	if err := json.Unmarshal([]byte(run("leases", "--json")), &leases); err != nil || leases.Items[0].UsesLeft != 1 {
		t.Fatalf("one run did not consume exactly one use: %+v %v", leases, err)
	}
	if out := run("status"); !strings.Contains(out, "capability: verified") {
		t.Fatalf("broker status without a handle does not show the verified capability:\n%s", out)
	}
	var actions view.List[view.ActionEntry]
	if err := json.Unmarshal([]byte(run("actions", "--json")), &actions); err != nil || len(actions.Items) != 1 || actions.Items[0].Handle != s.Handle {
		t.Fatalf("actions --json: %+v %v", actions, err)
	}
}
