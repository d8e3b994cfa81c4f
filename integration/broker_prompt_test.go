//go:build linux

package integration

import (
	"fmt"
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

// refuse answers the prompt of a run with keys, which must make it exit
// with want before anything ran; it returns the run and its request.
func (r *promptRig) refuse(t *testing.T, keys string, want int) (*ptyRun, string) {
	t.Helper()
	p := r.run(t)
	id := p.prompted()
	p.typeKeys(keys)
	p.wantExit(want, fmt.Sprintf("after typing %q at the prompt", keys))
	r.noMarker(t)
	return p, id
}

// listApprovals is what `broker approvals` lists: the pending requests,
// then those that ended last.
func (d *brokerd) listApprovals(t *testing.T) []wire.ApprovalView {
	t.Helper()
	l, err := d.dial().List(wire.ListApprovals, false)
	if err != nil {
		t.Fatal(err)
	}
	return l.Approvals
}

// pending reports whether request id is still waiting for a decision.
func (r *promptRig) pending(t *testing.T, id string) bool {
	t.Helper()
	for _, a := range r.d.listApprovals(t) {
		if a.ID == id && a.State == wire.RequestPending {
			return true
		}
	}
	return false
}

// An approval made from another terminal while the prompt waits: the
// prompt notices it, says so and runs the command on that lease.
func TestPromptNoticesApprovalElsewhere(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	p := r.run(t)
	id := p.prompted()
	if out, code := r.d.CLI("approve", id); code != 0 {
		t.Fatalf("broker approve %s: exit %d\n%s", id, code, out)
	}
	p.wantExit(0, "after the approval elsewhere")
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
	after := p.afterPrompt()
	if !strings.Contains(after, "approved elsewhere") || !strings.Contains(after, l.Leases[0].ID) {
		t.Fatalf("the prompt did not say what happened (approved elsewhere, lease %s):\n%s", l.Leases[0].ID, after)
	}
}

// The same against the broker `broker run` embeds when no daemon
// answers: `broker approve` from another process reaches it.
func TestPromptNoticesApprovalElsewhereEmbedded(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	r.d.kill() // its verified capability report stays: the embedded broker does not probe again
	p := r.run(t)
	id := p.prompted()
	if out, code := r.d.CLI("approve", id); code != 0 {
		t.Fatalf("broker approve %s: exit %d\n%s", id, code, out)
	}
	p.wantExit(0, "after the approval elsewhere")
	if b, err := os.ReadFile(r.marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q, %v; want the command's output", b, err)
	}
}

// A denial made elsewhere ends the prompt: nothing runs.
func TestPromptNoticesDenialElsewhere(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	p := r.run(t)
	id := p.prompted()
	if out, code := r.d.CLI("deny", id, "--reason", "not now"); code != 0 {
		t.Fatalf("broker deny %s: exit %d\n%s", id, code, out)
	}
	p.wantExit(exitNotExecuted, "after the denial elsewhere")
	r.noMarker(t)
	if after := p.afterPrompt(); !strings.Contains(after, "denied elsewhere") ||
		!strings.Contains(after, "not now") {
		t.Fatalf("the prompt did not say it was denied elsewhere, and why:\n%s", after)
	}
}

// Ctrl-C at the prompt withdraws the request: nothing runs, the request
// is no longer pending, and the exit status is 130 (interrupted).
func TestPromptInterruptWithdrawsRequest(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	p, id := r.refuse(t, "\x03", exitInterrupted)
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
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	p, id := r.refuse(t, "\x04", exitNotExecuted)
	if after := p.afterPrompt(); !strings.HasPrefix(after, promptText+"\r\n") || !strings.HasSuffix(after, "\n") {
		t.Fatalf("after Ctrl-D the prompt's line was not ended first (%q):\n%s", after, p.out)
	}
	if r.pending(t, id) {
		t.Fatalf("request %s is still pending after Ctrl-D", id)
	}
}

// Deny at the prompt, then run the same command again: the second run
// asks anew (a new request, its card on the terminal) instead of being
// refused with the denial the first run already reported.
func TestPromptDenyThenRunAsksAnew(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	_, first := r.refuse(t, "n\n", exitNotExecuted)
	again := r.run(t)
	second := again.prompted()
	if second == first {
		t.Fatalf("the second run was shown the denied request %s again", first)
	}
	again.typeKeys("\x04")
	again.wait()
	r.noMarker(t)
	asked := map[string]wire.RequestState{}
	for _, a := range r.d.listApprovals(t) {
		asked[a.ID] = a.State
	}
	if len(asked) != 2 || asked[first] != wire.RequestDenied || asked[second] != wire.RequestDenied {
		t.Fatalf("want two requests, %s and %s, both denied; the broker lists %v", first, second, asked)
	}
}

// waitingRun starts `broker run` of the marker command without a
// terminal, which prints the approve command and waits; it returns the
// run, its stderr and the request it waits for.
func (r *promptRig) waitingRun(t *testing.T) (*exec.Cmd, *syncBuffer, string) {
	t.Helper()
	cmd := exec.Command(bins.broker, "run", "--state", r.d.State, "--workspace", r.ws, "--", "/bin/sh", "-c", "echo ran > marker")
	cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(daemonSafety); ; time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`approval required: request (ar-[0-9a-f]+)`).FindStringSubmatch(stderr.String()); m != nil {
			return cmd, stderr, m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("broker run never asked for approval:\n%s", stderr)
		}
	}
}

// A `broker run` interrupted while it waits for approval (no terminal:
// it printed the approve command) leaves its request pending: a second
// `broker run` of the same command finds the same request, and runs once
// the operator approves it.
func TestInterruptedRunLeavesItsRequestToTheNext(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	first, stderr, id := r.waitingRun(t)
	first.Process.Signal(syscall.SIGINT)
	if err := first.Wait(); first.ProcessState.ExitCode() != exitInterrupted {
		t.Fatalf("interrupted broker run: %v, want exit %d:\n%s", err, exitInterrupted, stderr)
	}
	if !r.pending(t, id) {
		t.Fatalf("request %s is no longer pending once the run that asked for it was interrupted", id)
	}
	second, stderr, again := r.waitingRun(t)
	if again != id {
		t.Fatalf("the second run of the same command asked anew (%s), want the pending %s", again, id)
	}
	if out, code := r.d.CLI("approve", id); code != 0 {
		t.Fatalf("broker approve %s: exit %d\n%s", id, code, out)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("the second run after the approval: %v\n%s", err, stderr)
	}
	if b, err := os.ReadFile(r.marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q, %v; want the command's output", b, err)
	}
}

// A request pending when the broker was killed is still pending once a
// broker opens the state directory again: approved then, its command
// runs under the lease.
func TestRequestSurvivesRestart(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	req := wire.ActionRequest{Executable: "/bin/true", Cwd: ".", Profile: wire.ProfileShort}
	s, err := r.d.dial().Submit(r.ws, req)
	if err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v, %v", s, err)
	}
	r.d.kill() // SIGKILL: no connection is ended in order
	r.d = startBroker(t, r.d.State)
	if !r.pending(t, s.Approval.ID) {
		t.Fatalf("request %s is not pending after the restart: %+v", s.Approval.ID, r.d.listApprovals(t))
	}
	if out, code := r.d.CLI("approve", s.Approval.ID); code != 0 {
		t.Fatalf("approving the request from before the restart: exit %d\n%s", code, out)
	}
	if again, err := r.d.dial().Submit(r.ws, req); err != nil || again.Handle == "" {
		t.Fatalf("the same command after the approval: %+v, %v; want accepted", again, err)
	}
}

// A number typed at the prompt grants that many runs of exactly this
// command: this run uses one, and the lease keeps the rest.
func TestPromptGrantsANumberOfUses(t *testing.T) {
	t.Parallel() // a daemon of its own
	r := newPromptRig(t)
	p := r.run(t)
	id := p.prompted()
	p.typeKeys("3\n")
	p.wantExit(0, `after typing "3" at the prompt`)
	if b, err := os.ReadFile(r.marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker %q, %v; want the command's output", b, err)
	}
	l, err := r.d.dial().List(wire.ListLeases, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Leases) != 1 || l.Leases[0].ApprovalID != id || l.Leases[0].UsesLeft != 2 {
		t.Fatalf("want one lease of 3 uses granted for %s, used once: %+v", id, l.Leases)
	}
}
