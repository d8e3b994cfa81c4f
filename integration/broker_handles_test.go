//go:build linux

package integration

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// sleeper writes "up" to the file named by its first argument once it has
// a child, then sleeps; the marker is its second argument.
const sleeper = `
import os, sys, time
c = os.fork()
if c == 0:
    while True: time.sleep(1)
with open(sys.argv[1], "w") as f: f.write("up %d\n" % c)
while True: time.sleep(1)
`

// TestBrokerWaitTimeoutThenCancel: a wait with a short budget answers
// wait_timeout while the action runs (not a failure), and a cancel ends
// the whole group as cancelled_reaped.
func TestBrokerWaitTimeoutThenCancel(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	mark := token(t)
	t.Cleanup(func() { killMarked(t, mark) })
	up := filepath.Join(a.WS, "up")
	h := a.Start(a.request(wire.ProfileShort, python(t), "-c", sleeper, up, mark), 1)
	a.awaitRunning(h, up, 2)

	st, state, err := a.cl.Wait(h, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if st != nil || state != wire.StateRunning {
		t.Fatalf("a short wait on a running action must be wait_timeout in state running; got %+v, %s", st, state)
	}
	if n := len(marked(t, mark)); n < 2 {
		t.Fatalf("after wait_timeout the action must still run; the scan sees %d process(es)", n)
	}

	res, err := a.cl.Cancel(h, "test")
	if err != nil || res != wire.CancelAccepted {
		t.Fatalf("cancel of a running action: %s, %v", res, err)
	}
	r := a.End(h)
	if r.Outcome != wire.CancelledReaped || r.Error == nil || r.Error.Code != wire.CodeCancelled {
		t.Fatalf("want cancelled_reaped/CANCELLED, got %s %+v", r.Outcome, r.Error)
	}
	rc := requireGone(t, d, r, mark)
	if rc.Outcome != wire.CancelledReaped || !hasEvent(rc, receipt.EventTermSent) {
		t.Errorf("receipt: outcome %s, events %+v", rc.Outcome, rc.Events)
	}
}

// TestBrokerCancelAfterExit: cancelling an action that already ended is
// already_terminal, and changes nothing.
func TestBrokerCancelAfterExit(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	h, r := a.Run(a.request(wire.ProfileShort, "true"))
	if r.Outcome != wire.Exited || *r.ExitCode != 0 {
		t.Fatalf("true: %s %+v", r.Outcome, r.Error)
	}
	res, err := a.cl.Cancel(h, "too late")
	if err != nil || res != wire.CancelAlreadyTerminal {
		t.Fatalf("cancel after exit: want already_terminal, got %s, %v", res, err)
	}
	st, err := a.cl.Query(h)
	if err != nil || st.State != wire.StateTerminal || st.Result.Outcome != wire.Exited || st.Result.ReceiptID != r.ReceiptID {
		t.Fatalf("the cancel changed the action: %+v, %v", st, err)
	}
}

// runJSON is what `broker run --json` prints.
type runJSON struct {
	Handle    *string `json:"handle"`
	Outcome   string  `json:"outcome"`
	ExitCode  *int32  `json:"exit_code"`
	Signal    *uint8  `json:"signal"`
	GroupGone bool    `json:"group_gone"`
	Error     *struct {
		Code, Message string
	} `json:"error"`
	Stdout, Stderr struct {
		Text          string `json:"text"`
		ObservedBytes uint64 `json:"observed_bytes"`
		RetainedBytes uint64 `json:"retained_bytes"`
		DroppedBytes  uint64 `json:"dropped_bytes"`
		Truncated     bool   `json:"truncated"`
	}
	ReceiptID        *string                `json:"receipt_id"`
	ProtectedChanges []wire.ProtectedChange `json:"protected_changes"`
	// Denials, RoutineDenials and DenialsSeen are what the sandbox was
	// seen to refuse (integration/denials_test.go reads them).
	Denials        []shownDenial `json:"denials"`
	RoutineDenials []shownDenial `json:"routine_denials"`
	DenialsSeen    *struct {
		Sources         []string
		Total, Unlisted uint64
	} `json:"denials_seen"`
}

// run runs `broker run --approve --json` against the daemon as a
// subprocess and returns its raw output, decoded object and exit status.
func (a *agent) run(profile wire.Profile, argv ...string) (string, *runJSON, int) {
	a.t.Helper()
	args := append([]string{"run", "--approve", "--json", "--workspace", a.WS, "--profile", profile.String(),
		"--session", "s-" + token(a.t), "--"}, argv...)
	out, code := a.d.CLI(args...)
	var j runJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		a.t.Fatalf("broker run --json printed no object: %v\n%s", err, out)
	}
	return out, &j, code
}

// TestBrokerRunSIGKILLed: a target killed by SIGKILL is signaled with
// signal 9, in the result, the receipt and `broker run`'s exit status.
func TestBrokerRunSIGKILLed(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	_, j, code := a.run(wire.ProfileShort, python(t), "-c", "import os; print('dying', flush=True); os.kill(os.getpid(), 9)")
	if j.Outcome != "signaled" || j.Signal == nil || *j.Signal != 9 || j.ExitCode != nil || !j.GroupGone {
		t.Fatalf("want signaled 9 with the group gone, got %+v %+v", j, j.Error)
	}
	if code != 128+9 {
		t.Fatalf("broker run exit status %d, want 137", code)
	}
	if j.Stdout.Text != "dying\n" {
		t.Fatalf("stdout %q", j.Stdout.Text)
	}
	rc := d.Receipt(*j.ReceiptID)
	if rc.Outcome != wire.Signaled || rc.Signal == nil || *rc.Signal != 9 || rc.ExitCode != nil || rc.GroupGone == nil {
		t.Fatalf("receipt: outcome %s signal %v exit %v groupGone %v", rc.Outcome, rc.Signal, rc.ExitCode, rc.GroupGone)
	}
}

// politeExit writes "up", then exits 0 when it receives SIGTERM.
const politeExit = `
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
with open(sys.argv[1], "w") as f: f.write("up\n")
while True: time.sleep(1)
`

// TestBrokerCancelledTargetThatExitsZero: a target that answers the
// broker's SIGTERM by exiting 0 is still cancelled_reaped, carries no exit
// code that could be read as its own success, and gets its receipt.
func TestBrokerCancelledTargetThatExitsZero(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	up := filepath.Join(a.WS, "up")
	h := a.Start(a.request(wire.ProfileShort, python(t), "-c", politeExit, up), 1)
	a.awaitRunning(h, up, 1)
	if res, err := a.cl.Cancel(h, "test"); err != nil || res != wire.CancelAccepted {
		t.Fatalf("cancel: %s, %v", res, err)
	}
	r := a.End(h)
	if r.Outcome != wire.CancelledReaped || r.ExitCode != nil || r.ReceiptID == "" || !r.GroupGone {
		t.Fatalf("want cancelled_reaped without an exit code and with a receipt; got %s exit %v receipt %q gone %v",
			r.Outcome, r.ExitCode, r.ReceiptID, r.GroupGone)
	}
	if rc := d.Receipt(h); rc.Outcome != wire.CancelledReaped || rc.ExitCode != nil {
		t.Fatalf("receipt: outcome %s exit %v", rc.Outcome, rc.ExitCode)
	}
}
