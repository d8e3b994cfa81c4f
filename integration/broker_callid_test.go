//go:build linux

package integration

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// appendStart appends the line "start" to the file $1 each time it runs.
const appendStart = `echo start >> "$1"`

// submitCall submits req under call, failing the test on a refusal.
func (a *agent) submitCall(req wire.ActionRequest, call string) client.Submitted {
	a.t.Helper()
	s, err := a.cl.SubmitCall(a.WS, req, call)
	if err != nil {
		a.t.Fatalf("submit call %s: %v", call, err)
	}
	return s
}

// usesLeft is the uses left of lease id, as the operator lists them.
func (a *agent) usesLeft(id string) uint32 {
	a.t.Helper()
	l, err := a.cl.List(wire.ListLeases, false)
	if err != nil {
		a.t.Fatal(err)
	}
	for _, v := range l.Leases {
		if v.ID == id {
			return v.UsesLeft
		}
	}
	a.t.Fatalf("lease %s is not listed", id)
	return 0
}

// TestBrokerCallIDStartsOneProcess: a real daemon and real processes,
// counted on the host (the target appends a line to a workspace file each
// time it runs). The same call twice — while its approval is pending, and
// after its action ended — raises one request and starts one process,
// under a lease with uses to spare; the same call id with another argv is
// ARGUMENTS_INVALID and runs nothing; another session is another
// namespace; `broker run --call-id` run twice runs once.
func TestBrokerCallIDStartsOneProcess(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	starts := filepath.Join(a.WS, "starts")
	req := a.request(wire.ProfileShort, "/bin/sh", "-c", appendStart, "sh", starts)

	first := a.submitCall(req, "c-1")
	if first.Approval == nil {
		t.Fatalf("want an approval request: %+v", first)
	}
	if again := a.submitCall(req, "c-1"); again.Approval == nil || again.Approval.ID != first.Approval.ID {
		t.Fatalf("a repeat while pending must answer request %s, not raise another: %+v", first.Approval.ID, again.Approval)
	}
	lease, err := a.cl.Approve(first.Approval.ID, 3, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := a.submitCall(req, "c-1")
	if s.Handle == "" || s.Repeat != nil {
		t.Fatalf("the approved call must start its action: %+v", s)
	}
	res := a.End(s.Handle)
	if res.Outcome != wire.Exited || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("the action: %+v", res)
	}
	for range 2 {
		r := a.submitCall(req, "c-1")
		if r.Handle != s.Handle || r.Repeat == nil || r.Repeat.State != wire.StateTerminal || r.Repeat.Result == nil ||
			r.Repeat.Result.ReceiptID != res.ReceiptID {
			t.Fatalf("a repeat after the end must answer action %s with its receipt %s: %+v", s.Handle, res.ReceiptID, r.Repeat)
		}
	}
	if n, left := countPrefix(t, starts, "start"), a.usesLeft(lease.ID); n != 1 || left != 2 {
		t.Fatalf("the target ran %d times and the lease has %d uses left; want 1 and 2", n, left)
	}

	other := req
	other.Argv = append(append([]string(nil), req.Argv...), "extra")
	_, err = a.cl.SubmitCall(a.WS, other, "c-1")
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeArgumentsInvalid || !strings.Contains(we.Message, `call_id "c-1"`) ||
		!strings.Contains(we.Message, "another request") {
		t.Fatalf("the same call id with another argv: %v", err)
	}

	elsewhere := req
	elsewhere.Session = "s-" + token(t)
	e := a.submitCall(elsewhere, "c-1")
	if e.Handle == "" || e.Handle == s.Handle || e.Repeat != nil {
		t.Fatalf("in another session the call id is unused: %+v", e)
	}
	a.End(e.Handle)
	if n, left := countPrefix(t, starts, "start"), a.usesLeft(lease.ID); n != 2 || left != 1 {
		t.Fatalf("the target ran %d times and the lease has %d uses left; want 2 and 1", n, left)
	}

	// broker run --call-id: the second run follows the first's action.
	cli := filepath.Join(a.WS, "cli-starts")
	args := []string{"run", "--approve", "--json", "--workspace", a.WS, "--session", "s-" + token(t), "--call-id", "c-cli",
		"--", "/bin/sh", "-c", appendStart, "sh", cli}
	var handles []string
	for range 2 {
		out, code := d.CLI(args...)
		var got struct {
			Handle  string `json:"handle"`
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || got.Outcome != "exited" {
			t.Fatalf("broker run --call-id: exit %d, %v\n%s", code, err, out)
		}
		handles = append(handles, got.Handle)
	}
	if handles[0] == "" || handles[1] != handles[0] {
		t.Fatalf("broker run --call-id twice answered %q: want one action", handles)
	}
	if n := countPrefix(t, cli, "start"); n != 1 {
		t.Fatalf("broker run --call-id twice ran the target %d times", n)
	}
}

// TestBrokerCallIDAcrossSIGKILL: a call that started a still-running
// process, and a call whose action had ended, both survive a SIGKILL of
// the daemon: after the restart on the same state directory each repeat
// answers the same handle — unknown for the one in flight (never replayed),
// terminal with its receipt for the one that ended — the target started
// exactly once each (counted on the host), and no lease use moves, though
// both leases have uses to spare.
func TestBrokerCallIDAcrossSIGKILL(t *testing.T) {
	d1, a, mark := markedAgent(t)

	quick := filepath.Join(a.WS, "quick")
	done := a.request(wire.ProfileShort, "/bin/sh", "-c", appendStart, "sh", quick)
	pending := a.submitCall(done, "c-done")
	doneLease, err := a.cl.Approve(pending.Approval.ID, 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hDone := a.submitCall(done, "c-done").Handle
	resDone := a.End(hDone)

	starts := filepath.Join(a.WS, "starts")
	long := a.request(wire.ProfileShort, python(t), "-c", startsThenSleeps, starts, mark)
	pending = a.submitCall(long, "c-long")
	longLease, err := a.cl.Approve(pending.Approval.ID, 2, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	hLong := a.submitCall(long, "c-long").Handle
	a.awaitRunning(hLong, starts, 4)
	_, a2, _ := restartAfterSIGKILL(t, d1, a, mark)
	for range 2 {
		r := a2.submitCall(long, "c-long")
		if r.Handle != hLong || r.Repeat == nil || r.Repeat.State != wire.StateUnknown || r.Repeat.Result == nil ||
			r.Repeat.Result.Outcome != wire.OutcomeUnknown {
			t.Fatalf("after the restart the call must answer its unknown action %s: %+v", hLong, r.Repeat)
		}
		r = a2.submitCall(done, "c-done")
		if r.Handle != hDone || r.Repeat == nil || r.Repeat.State != wire.StateTerminal || r.Repeat.Result.ReceiptID != resDone.ReceiptID {
			t.Fatalf("after the restart the call must answer its ended action %s: %+v", hDone, r.Repeat)
		}
	}
	if n := countPrefix(t, starts, "start "); n != 1 {
		t.Fatalf("the long target started %d times; an unknown action must never re-run", n)
	}
	if n := countPrefix(t, quick, "start"); n != 1 {
		t.Fatalf("the quick target ran %d times", n)
	}
	if l, d := a2.usesLeft(longLease.ID), a2.usesLeft(doneLease.ID); l != 1 || d != 1 {
		t.Fatalf("uses left %d and %d after the repeats, want 1 and 1: a repeat consumes nothing", l, d)
	}
	acts, err := a2.cl.List(wire.ListActions, false)
	if err != nil || len(acts.Actions) != 2 {
		t.Fatalf("want the two actions and no more: %+v, %v", acts, err)
	}
	if alive := marked(t, mark); len(alive) > 0 {
		t.Fatalf("process(es) %v of %s are alive after the restart", alive, hLong)
	}
}
