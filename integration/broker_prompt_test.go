//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/wire"
)

// The approval prompt of `broker run` on a terminal (issue 18, items 2
// and 4), typed at through a pseudo-terminal (pty_test.go), against a
// daemon and against the broker `run` embeds.

// Exit statuses of `broker run` (docs/architecture.md §3.2).
const (
	exitNotExecuted = 125 // refused or denied: nothing ran
	exitInterrupted = 130 // interrupted: at the prompt nothing ran, and the request was withdrawn
)

// promptRig is a daemon with a workspace, and the command every test
// asks to run: it writes a marker into the workspace.
type promptRig struct {
	d      *brokerd
	ws     string
	marker string
}

func newPromptRig(t *testing.T) *promptRig {
	d := startBroker(t, "")
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return &promptRig{d: d, ws: ws, marker: filepath.Join(ws, "marker")}
}

// run starts `broker run` of the marker command on a terminal.
func (r *promptRig) run(t *testing.T) *ptyRun {
	return startPTY(t, "run", "--state", r.d.State, "--workspace", r.ws, "--", "/bin/sh", "-c", "echo ran > marker")
}

// noMarker requires that the command never ran.
func (r *promptRig) noMarker(t *testing.T) {
	t.Helper()
	if _, err := os.Lstat(r.marker); !os.IsNotExist(err) {
		t.Fatalf("the command ran (marker: %v)", err)
	}
}

// pending reports whether request id is still waiting for a decision.
func (r *promptRig) pending(t *testing.T, id string) bool {
	t.Helper()
	l, err := r.d.dial().List(wire.ListApprovals, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range l.Approvals {
		if a.ID == id && a.State == wire.RequestPending {
			return true
		}
	}
	return false
}

// An approval made from another terminal while the prompt waits: the
// prompt notices it, says so and runs the command on that lease.
func TestPromptNoticesApprovalElsewhere(t *testing.T) {
	r := newPromptRig(t)
	p := r.run(t)
	id := p.prompted()
	if out, code := r.d.CLI("approve", id); code != 0 {
		t.Fatalf("broker approve %s: exit %d\n%s", id, code, out)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("broker run: exit %d after the approval elsewhere:\n%s", code, p.out)
	}
	b, err := os.ReadFile(r.marker)
	if err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q, %v; want the command's output", b, err)
	}
	l, err := r.d.dial().List(wire.ListLeases, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Leases) != 1 || l.Leases[0].ApprovalID != id || l.Leases[0].UsesLeft != 0 {
		t.Fatalf("want exactly the one lease granted for %s, used once: %+v", id, l.Leases)
	}
	after := p.out.String()[strings.LastIndex(p.out.String(), promptText):]
	if !strings.Contains(after, "approved elsewhere") || !strings.Contains(after, l.Leases[0].ID) {
		t.Fatalf("the prompt did not say what happened (approved elsewhere, lease %s):\n%s", l.Leases[0].ID, after)
	}
}

// The same against the broker `broker run` embeds when no daemon
// answers: `broker approve` from another process reaches it.
func TestPromptNoticesApprovalElsewhereEmbedded(t *testing.T) {
	r := newPromptRig(t)
	r.d.kill() // its verified capability report stays: the embedded broker does not probe again
	p := r.run(t)
	id := p.prompted()
	if out, code := r.d.CLI("approve", id); code != 0 {
		t.Fatalf("broker approve %s: exit %d\n%s", id, code, out)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("broker run: exit %d after the approval elsewhere:\n%s", code, p.out)
	}
	if b, err := os.ReadFile(r.marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q, %v; want the command's output", b, err)
	}
}

// A denial made elsewhere ends the prompt: nothing runs.
func TestPromptNoticesDenialElsewhere(t *testing.T) {
	r := newPromptRig(t)
	p := r.run(t)
	id := p.prompted()
	if out, code := r.d.CLI("deny", id, "--reason", "not now"); code != 0 {
		t.Fatalf("broker deny %s: exit %d\n%s", id, code, out)
	}
	if code := p.wait(); code != exitNotExecuted {
		t.Fatalf("broker run: exit %d after the denial elsewhere, want %d:\n%s", code, exitNotExecuted, p.out)
	}
	r.noMarker(t)
	if after := p.out.String()[strings.LastIndex(p.out.String(), promptText):]; !strings.Contains(after, "denied elsewhere") ||
		!strings.Contains(after, "not now") {
		t.Fatalf("the prompt did not say it was denied elsewhere, and why:\n%s", after)
	}
}

// Ctrl-C at the prompt withdraws the request: nothing runs, the request
// is no longer pending, and the exit status is 130 (interrupted).
func TestPromptInterruptWithdrawsRequest(t *testing.T) {
	r := newPromptRig(t)
	p := r.run(t)
	id := p.prompted()
	p.typeKeys("\x03")
	if code := p.wait(); code != exitInterrupted {
		t.Fatalf("broker run: exit %d after Ctrl-C at the prompt, want %d:\n%s", code, exitInterrupted, p.out)
	}
	r.noMarker(t)
	if r.pending(t, id) {
		t.Fatalf("request %s is still pending after Ctrl-C:\n%s", id, p.out)
	}
	if out, code := r.d.CLI("approve", id); code == 0 {
		t.Fatalf("request %s withdrawn at the prompt could still be approved:\n%s", id, out)
	}
	if !strings.Contains(p.out.String(), "requester cancelled") {
		t.Fatalf("the prompt did not say the request was withdrawn:\n%s", p.out)
	}
}

// Ctrl-D at the prompt denies, on a line of its own.
func TestPromptEOFDenies(t *testing.T) {
	r := newPromptRig(t)
	p := r.run(t)
	id := p.prompted()
	p.typeKeys("\x04")
	if code := p.wait(); code != exitNotExecuted {
		t.Fatalf("broker run: exit %d after Ctrl-D at the prompt, want %d:\n%s", code, exitNotExecuted, p.out)
	}
	r.noMarker(t)
	out := p.out.String()
	after := out[strings.LastIndex(out, promptText)+len(promptText):]
	if !strings.HasPrefix(after, "\r\n") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("after Ctrl-D the prompt's line was not ended first (%q):\n%s", after, out)
	}
	if r.pending(t, id) {
		t.Fatalf("request %s is still pending after Ctrl-D", id)
	}
}

// Deny at the prompt, then run the same command again: the second run
// asks anew (a new request, its card on the terminal) instead of being
// refused with the denial the first run already reported.
func TestPromptDenyThenRunAsksAnew(t *testing.T) {
	r := newPromptRig(t)
	p := r.run(t)
	first := p.prompted()
	p.typeKeys("n\n")
	if code := p.wait(); code != exitNotExecuted {
		t.Fatalf("broker run: exit %d after answering n, want %d:\n%s", code, exitNotExecuted, p.out)
	}
	again := r.run(t)
	second := again.prompted()
	if second == first {
		t.Fatalf("the second run was shown the denied request %s again", first)
	}
	again.typeKeys("\x04")
	again.wait()
	r.noMarker(t)
	l, err := r.d.dial().List(wire.ListApprovals, false)
	if err != nil {
		t.Fatal(err)
	}
	asked := map[string]wire.RequestState{}
	for _, a := range l.Approvals {
		asked[a.ID] = a.State
	}
	if len(asked) != 2 || asked[first] != wire.RequestDenied || asked[second] != wire.RequestDenied {
		t.Fatalf("want two requests, %s and %s, both denied; the broker lists %v", first, second, asked)
	}
}

// A `broker run` interrupted while it waits for approval (no terminal:
// it printed the approve command) leaves no approvable request behind:
// its requester went away, so the request expires and says so, in
// `broker approvals` and to `broker approve`.
func TestRequestExpiresWhenRunInterrupted(t *testing.T) {
	r := newPromptRig(t)
	cmd := exec.Command(bins.broker, "run", "--state", r.d.State, "--workspace", r.ws, "--", "/bin/sh", "-c", "echo ran > marker")
	cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id := ""
	for deadline := time.Now().Add(daemonSafety); id == ""; time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`approval required: request (ar-[0-9a-f]+)`).FindStringSubmatch(stderr.String()); m != nil {
			id = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("broker run never asked for approval:\n%s", stderr)
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != exitInterrupted {
		t.Fatalf("interrupted broker run: %v, want exit %d:\n%s", err, exitInterrupted, stderr)
	}
	for deadline := time.Now().Add(daemonSafety); r.pending(t, id); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("request %s is still pending after its requester went away", id)
		}
	}
	if out, _ := r.d.CLI("approvals"); !regexp.MustCompile(id + `\s+expired\s+.*: its requester went away`).MatchString(out) {
		t.Fatalf("broker approvals does not show %s expired because its requester went away:\n%s", id, out)
	}
	approve := exec.Command(bins.broker, "approve", id, "--state", r.d.State)
	out, _ := approve.CombinedOutput()
	if approve.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "expired because its requester went away") {
		t.Fatalf("broker approve %s of the expired request: exit %d\n%s", id, approve.ProcessState.ExitCode(), out)
	}
	r.noMarker(t)
}
