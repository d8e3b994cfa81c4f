package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker/view"
	"warrant/wire"
)

// The in-process protocol tests: a real broker (its sockets, journal and
// receipts) with an executor that starts nothing, the server on the SDK's
// in-memory transport, and the SDK's client. The integration suite runs
// the real binaries under clients nobody here wrote.

// TestToolsAreTheAgentsOnly: the seven tools, each with closed input and
// output schemas and annotations that say what it does; nothing named
// after an operator verb.
func TestToolsAreTheAgentsOnly(t *testing.T) {
	s := newRig(t).connect(Config{}, nil, "")
	var names []string
	for n := range s.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"cancel", "goal_status", "goal_verify", "receipt", "run", "status", "wait"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for name, tl := range s.tools {
		for _, sch := range []any{tl.InputSchema, tl.OutputSchema} {
			m, _ := sch.(map[string]any)
			if m["type"] != "object" || m["additionalProperties"] != false {
				t.Errorf("%s: a schema is not a closed object: %v", name, sch)
			}
		}
		a := tl.Annotations
		if a == nil || a.OpenWorldHint == nil || *a.OpenWorldHint || a.DestructiveHint == nil {
			t.Fatalf("%s: annotations %+v", name, a)
		}
		readOnly := name == "status" || name == "receipt" || strings.HasPrefix(name, "goal_")
		if a.ReadOnlyHint != readOnly || *a.DestructiveHint == readOnly {
			t.Errorf("%s: readOnlyHint %v destructiveHint %v", name, a.ReadOnlyHint, *a.DestructiveHint)
		}
		if a.IdempotentHint != (name != "run") {
			t.Errorf("%s: idempotentHint %v", name, a.IdempotentHint)
		}
	}
	in := s.tools["run"].InputSchema.(map[string]any)
	if req, _ := in["required"].([]any); len(req) != 1 || req[0] != "executable" {
		t.Errorf("run requires %v, want executable alone", in["required"])
	}
	if call, _ := in["properties"].(map[string]any)["call_id"].(map[string]any); call["type"] != "string" || call["maxLength"] != 256.0 {
		t.Errorf("run's call_id: %v, want an optional string of at most 256 bytes", call)
	}
}

// TestRunCallIDRunsOnce: run with a call_id answers its one approval
// request while pending and, once it ran, the same action and receipt
// without running it again; another command under the call_id is a tool
// error; another connection (another session) is another namespace.
func TestRunCallIDRunsOnce(t *testing.T) {
	r := newRig(t)
	s := r.connect(Config{}, nil, "")
	args := map[string]any{"executable": r.tool, "argv": []string{"x"}, "call_id": "c-1"}
	var out, again actionOut
	s.call("run", args, &out)
	if s.call("run", args, &again); out.Approval == nil || again.Approval == nil || again.Approval.RequestID != out.Approval.RequestID {
		t.Fatalf("a repeat while pending must answer the same request: %+v, then %+v", out.Approval, again.Approval)
	}
	if _, err := r.operator.Approve(out.Approval.RequestID, 3, time.Hour); err != nil {
		t.Fatal(err)
	}
	s.call("wait", map[string]any{"approval_id": out.Approval.RequestID}, &out)
	if out.State != "terminal" || out.Handle == nil || out.Result.ReceiptID == nil {
		t.Fatalf("wait after approval: %+v", out)
	}
	if res := s.call("run", args, &again); res.IsError || again.State != "terminal" || again.Handle == nil || *again.Handle != *out.Handle ||
		*again.Result.ReceiptID != *out.Result.ReceiptID {
		t.Fatalf("a repeat after the end must answer action %s and its receipt: %+v %s", *out.Handle, again, text(res))
	}
	other := map[string]any{"executable": r.tool, "argv": []string{"y"}, "call_id": "c-1"}
	if res := s.call("run", other, nil); !res.IsError || !strings.HasPrefix(text(res), "ARGUMENTS_INVALID: ") || !strings.Contains(text(res), `call_id "c-1"`) {
		t.Fatalf("another command under the call_id: isError %v: %s", res.IsError, text(res))
	}
	var elsewhere actionOut
	r.connect(Config{}, nil, "").call("run", args, &elsewhere)
	if elsewhere.State != "terminal" || elsewhere.Handle == nil || *elsewhere.Handle == *out.Handle {
		t.Fatalf("in another session the call_id is unused: %+v", elsewhere)
	}
	acts, err := r.operator.List(wire.ListActions, false)
	must(t, err)
	if len(acts.Actions) != 2 {
		t.Fatalf("%d actions, want 2 (one per session)", len(acts.Actions))
	}
}

// TestRunNeedsAHumanThenWaitRuns: run of an unapproved command returns at
// once with the request and the exact approve command, and nothing runs;
// waiting on the approval is wait_timeout until the operator approves,
// then the same command runs and wait returns its result; a second wait
// on the approval follows the same action.
func TestRunNeedsAHumanThenWaitRuns(t *testing.T) {
	r := newRig(t)
	s := r.connect(Config{}, nil, "")
	var out actionOut
	res := s.call("run", map[string]any{"executable": r.tool, "argv": []string{"hello", "world"}}, &out)
	if res.IsError || out.State != stateApproval || out.Approval == nil || out.Result != nil || out.Handle != nil {
		t.Fatalf("run of an unapproved command: %+v %s", out, text(res))
	}
	id := out.Approval.RequestID
	if out.Approval.ApproveCommand != "broker approve "+id+" --state "+r.state ||
		!strings.Contains(text(res), "A human must approve this command outside the agent") ||
		!strings.Contains(text(res), out.Approval.ApproveCommand) || !strings.Contains(text(res), "`broker contracts offer "+id+" --state "+r.state+"`") {
		t.Fatalf("the result does not tell the agent what the human must do: %s", text(res))
	}
	if out.Approval.Executable != r.tool || !slices.Equal(out.Approval.Argv, []string{"hello", "world"}) {
		t.Fatalf("approval shows %s %v", out.Approval.Executable, out.Approval.Argv)
	}

	res = s.call("wait", map[string]any{"approval_id": id, "wait_ms": 0}, &out)
	if res.IsError || out.State != stateApproval || !out.WaitTimeout {
		t.Fatalf("wait before approval: %+v %s", out, text(res))
	}
	if acts, err := r.operator.List(wire.ListActions, false); err != nil || len(acts.Actions) != 0 {
		t.Fatalf("something ran before approval: %+v %v", acts, err)
	}

	lease, err := r.operator.Approve(id, 1, time.Hour)
	must(t, err)
	res = s.call("wait", map[string]any{"approval_id": id}, &out)
	if res.IsError || out.State != "terminal" || out.Result == nil || out.Result.Outcome != "exited" ||
		*out.Result.ExitCode != 0 || out.Result.Stdout.Text != "hello world\n" || out.Result.ReceiptID == nil {
		t.Fatalf("wait after approval: %+v %s", out, text(res))
	}
	usedLease(t, "wait", out.Result, lease.ID, 0, "")
	if !strings.Contains(text(res), "exited (exit 0)") || !strings.Contains(text(res), "hello world") {
		t.Errorf("text rendering: %s", text(res))
	}
	handle := *out.Handle

	var again actionOut
	s.call("wait", map[string]any{"approval_id": id}, &again)
	if again.Handle == nil || *again.Handle != handle || *again.Result.ReceiptID != *out.Result.ReceiptID {
		t.Fatalf("a second wait on the approval ran something else: %+v", again)
	}
	var st actionOut
	s.call("status", map[string]any{"handle": handle}, &st)
	if st.State != "terminal" || *st.Result.ReceiptID != *out.Result.ReceiptID {
		t.Fatalf("status: %+v", st)
	}
	usedLease(t, "status", st.Result, lease.ID, 0, "")
	acts, err := r.operator.List(wire.ListActions, false)
	must(t, err)
	if len(acts.Actions) != 1 || !strings.HasPrefix(acts.Actions[0].Session, "mcp-") {
		t.Fatalf("want one action in the connection's own session: %+v", acts.Actions)
	}
}

// TestWaitTimeoutProgressAndCancel: under an existing lease, run returns
// wait_timeout (not an error) for an action still running, with progress
// notifications meanwhile; cancel ends it, wait reports cancelled_reaped,
// and a second cancel changes nothing.
func TestWaitTimeoutProgressAndCancel(t *testing.T) {
	r := newRig(t)
	s := r.connect(Config{Session: "fixed"}, nil, "")
	var out actionOut
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"hold"}}, &out)
	if _, err := r.operator.Approve(out.Approval.RequestID, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	res := s.call("wait", map[string]any{"approval_id": out.Approval.RequestID, "wait_ms": 2500}, &out, withProgress("tok"))
	if res.IsError || out.State != "running" || !out.WaitTimeout || out.Handle == nil || out.Result != nil {
		t.Fatalf("a running action after the budget: %+v %s", out, text(res))
	}
	handle := *out.Handle
	s.mu.Lock()
	got := slices.Clone(s.progress)
	s.mu.Unlock()
	if len(got) == 0 || got[0].ProgressToken != "tok" || !strings.Contains(got[len(got)-1].Message, handle) {
		t.Fatalf("progress notifications: %+v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Progress <= got[i-1].Progress {
			t.Fatalf("progress must grow: %+v", got)
		}
	}

	var c cancelOut
	if res := s.call("cancel", map[string]any{"handle": handle}, &c); res.IsError || c.Result != "accepted" {
		t.Fatalf("cancel: %+v %s", c, text(res))
	}
	s.call("wait", map[string]any{"handle": handle}, &out)
	if out.State != "terminal" || out.Result.Outcome != "cancelled_reaped" || out.Result.Error.Code != "CANCELLED" || out.Result.GroupGone == nil || !*out.Result.GroupGone {
		t.Fatalf("after cancel: %+v", out.Result)
	}
	if s.call("cancel", map[string]any{"handle": handle}, &c); c.Result != "already_terminal" {
		t.Fatalf("second cancel: %+v", c)
	}
}

// TestBadArgumentsAreToolErrors: arguments off the schema, a huge argv and
// the broker's own refusals are results with isError and the stable code;
// unknown tools (an operator verb among them) are protocol errors; and the
// server keeps serving throughout.
func TestBadArgumentsAreToolErrors(t *testing.T) {
	r := newRig(t)
	s := r.connect(Config{}, nil, "")
	huge := make([]string, 10000)
	for i := range huge {
		huge[i] = strings.Repeat("x", 200)
	}
	for name, c := range map[string]struct {
		tool string
		args any
		code string
	}{
		"an extra field":          {"run", map[string]any{"executable": r.tool, "approve": true}, "ARGUMENTS_INVALID"},
		"no executable":           {"run", map[string]any{"argv": []string{"x"}}, "ARGUMENTS_INVALID"},
		"argv not a list":         {"run", map[string]any{"executable": r.tool, "argv": "a b"}, "ARGUMENTS_INVALID"},
		"argv of numbers":         {"run", map[string]any{"executable": r.tool, "argv": []any{1, 2}}, "ARGUMENTS_INVALID"},
		"argv null":               {"run", map[string]any{"executable": r.tool, "argv": nil}, "ARGUMENTS_INVALID"},
		"a huge argv":             {"run", map[string]any{"executable": r.tool, "argv": huge}, "ARGUMENTS_INVALID"},
		"one huge argument":       {"run", map[string]any{"executable": r.tool, "argv": []string{strings.Repeat("y", 40<<10)}}, "ARGUMENTS_INVALID"},
		"an unknown profile":      {"run", map[string]any{"executable": r.tool, "profile": "forever"}, "ARGUMENTS_INVALID"},
		"wait_ms too long":        {"run", map[string]any{"executable": r.tool, "wait_ms": 1e12}, "ARGUMENTS_INVALID"},
		"a call_id over the cap":  {"run", map[string]any{"executable": r.tool, "call_id": strings.Repeat("c", 257)}, "ARGUMENTS_INVALID"},
		"a call_id not text":      {"run", map[string]any{"executable": r.tool, "call_id": 7}, "ARGUMENTS_INVALID"},
		"wait_ms a string":        {"wait", map[string]any{"handle": "a-1", "wait_ms": "soon"}, "ARGUMENTS_INVALID"},
		"a NUL in argv":           {"run", map[string]any{"executable": r.tool, "argv": []string{"a\x00b"}}, "ARGUMENTS_INVALID"},
		"a relative cwd escaping": {"run", map[string]any{"executable": r.tool, "cwd": "../.."}, "PATH_INVALID"},
		"not found":               {"run", map[string]any{"executable": "no-such-program-4711"}, "EXECUTABLE_NOT_FOUND"},
		"both ids":                {"wait", map[string]any{"handle": "a-1", "approval_id": "ar-1"}, "ARGUMENTS_INVALID"},
		"an approval not asked":   {"wait", map[string]any{"approval_id": "ar-0123"}, "ARGUMENTS_INVALID"},
		"arguments not an object": {"status", []any{"a-1"}, "ARGUMENTS_INVALID"},
		"a receipt that is not":   {"receipt", map[string]any{"id": "r-nope"}, "ARGUMENTS_INVALID"},
	} {
		res := s.call(c.tool, c.args, nil)
		if !res.IsError || !strings.HasPrefix(text(res), c.code+": ") {
			t.Errorf("%s: want a tool error %s, got isError %v: %.300s", name, c.code, res.IsError, text(res))
		}
		if n := strings.Count(text(res), c.code+": "); n != 1 { // the code and its sentence lead, once
			t.Errorf("%s: the text says %s %d times:\n%s", name, c.code, n, text(res))
		}
	}
	var out actionOut
	if res := s.call("run", map[string]any{"executable": "no-such-program-4711"}, &out); out.State != stateRefused ||
		out.Result == nil || out.Result.Outcome != "known_not_executed" || out.Result.Error.Code != "EXECUTABLE_NOT_FOUND" {
		t.Errorf("a refusal's structured result: %+v %s", out, text(res))
	}
	for _, verb := range []string{"approve", "deny", "revoke", "resolve", "list", "approvals"} {
		if _, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: verb, Arguments: map[string]any{"id": "ar-1"}}); err == nil {
			t.Errorf("a tool named %s answered", verb)
		}
	}
	if _, err := s.cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
	if pending, err := r.operator.List(wire.ListApprovals, false); err != nil || len(pending.Approvals) > 1 {
		t.Fatalf("approvals after the bad calls: %+v %v", pending, err)
	}
	if leases, err := r.operator.List(wire.ListLeases, false); err != nil || len(leases.Leases) != 0 {
		t.Fatalf("a lease appeared: %+v %v", leases, err)
	}
}

// TestElicitationOnlyNudges: a client that supports elicitation is shown
// the pending request while wait waits, and its "accept" approves
// nothing: the request stays pending and no lease exists.
func TestElicitationOnlyNudges(t *testing.T) {
	r := newRig(t)
	var s *session
	copts := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		s.mu.Lock()
		s.asked = append(s.asked, req.Params)
		s.mu.Unlock()
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}}
	s = r.connect(Config{}, copts, "2025-11-25")
	var out actionOut
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"x"}}, &out)
	id := out.Approval.RequestID
	s.call("wait", map[string]any{"approval_id": id, "wait_ms": 1500}, &out)
	if out.State != stateApproval || !out.WaitTimeout {
		t.Fatalf("an accepted elicitation must not start anything: %+v", out)
	}
	s.mu.Lock()
	asked := slices.Clone(s.asked)
	s.mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0].Message, "broker approve "+id) || !strings.Contains(asked[0].Message, "approves nothing") {
		t.Fatalf("elicitations: %+v", asked)
	}
	pending, err := r.operator.List(wire.ListApprovals, false)
	must(t, err)
	leases, err := r.operator.List(wire.ListLeases, false)
	must(t, err)
	if len(pending.Approvals) != 1 || pending.Approvals[0].ID != id || len(leases.Leases) != 0 {
		t.Fatalf("after the elicitation: approvals %+v, leases %+v", pending.Approvals, leases.Leases)
	}
}

// TestReceiptVerifies: the receipt tool shows a run's receipt, by id and
// by handle, with its verdict and the summary `broker receipts show`
// prints.
func TestReceiptVerifies(t *testing.T) {
	r := newRig(t)
	s := r.connect(Config{}, nil, "")
	var out actionOut
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"z"}}, &out)
	if _, err := r.operator.Approve(out.Approval.RequestID, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	s.call("wait", map[string]any{"approval_id": out.Approval.RequestID}, &out)
	for _, id := range []string{*out.Result.ReceiptID, *out.Handle} {
		var rc receiptOut
		res := s.call("receipt", map[string]any{"id": id}, &rc)
		if res.IsError || !rc.Verified || rc.ReceiptID != *out.Result.ReceiptID || rc.Action != *out.Handle || rc.Outcome != "exited" ||
			len(rc.Problems) != 0 || rc.Receipt["receiptId"] != rc.ReceiptID {
			t.Fatalf("receipt %s: %+v", id, rc)
		}
		if !strings.HasPrefix(text(res), "Receipt "+rc.ReceiptID) || !strings.Contains(text(res), "verified") || text(res) != rc.Summary {
			t.Fatalf("receipt %s text: %s", id, text(res))
		}
	}
}

// TestDisconnectCancelsWhenEmbedded: when the broker lives in the server's
// process, an action the connection left running is cancelled when the
// client goes away, so closing the broker does not wait out its limit.
func TestDisconnectCancelsWhenEmbedded(t *testing.T) {
	r := newRig(t)
	s := r.connect(Config{Embedded: true, Meter: &Meter{}}, nil, "")
	var out actionOut
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"hold"}}, &out)
	if _, err := r.operator.Approve(out.Approval.RequestID, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	s.call("wait", map[string]any{"approval_id": out.Approval.RequestID, "wait_ms": 0}, &out)
	if out.Handle == nil || out.State == "terminal" {
		t.Fatalf("the held action: %+v", out)
	}
	s.cs.Close()
	if err := <-s.served; err != nil {
		t.Logf("serve: %v", err)
	}
	s.served <- nil // for the cleanup
	if !r.exec.wasCancelled(*out.Handle) {
		t.Fatalf("the action was not cancelled at disconnect; server log:\n%s", r.serverLogs)
	}
	st, _, err := r.operator.Wait(*out.Handle, 10*time.Second)
	if err != nil || st == nil || st.Result.Outcome != wire.CancelledReaped {
		t.Fatalf("after disconnect: %+v %v", st, err)
	}
}

// TestGoalToolsReportTheOracle: goal_verify is NOT_DONE until a run of
// the step's command exits 0 under the goal, then VERIFIED_DONE, and
// goal_status shows the same verdict; a run naming a step the goal does
// not have is refused.
func TestGoalToolsReportTheOracle(t *testing.T) {
	r := newRig(t)
	doc := fmt.Sprintf(`{"title":"t","workspace":%q,"steps":[{"id":"s","criteria":[`+
		`{"kind":"receipt","command":{"executable":%q,"argv":["ok"]}}]}]}`, r.ws, r.tool)
	g, err := r.connect(Config{}, nil, "").agent.CreateGoal("", doc)
	must(t, err)
	s := r.connect(Config{Goal: g.Goal}, nil, "")
	var out goalOut
	if res := s.call("goal_verify", map[string]any{}, &out); res.IsError || out.Status != "NOT_DONE" || out.Goal != g.Goal {
		t.Fatalf("goal_verify before any run: %+v %s", out, text(res))
	}
	var run actionOut
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"ok"}, "step": "s"}, &run)
	if run.Approval == nil {
		t.Fatalf("run: %+v", run)
	}
	_, err = r.operator.Approve(run.Approval.RequestID, 1, time.Hour)
	must(t, err)
	if res := s.call("run", map[string]any{"executable": r.tool, "argv": []string{"ok"}, "step": "s"}, &run); res.IsError || run.Result == nil {
		t.Fatalf("run after approval: %+v %s", run, text(res))
	}
	if res := s.call("goal_verify", map[string]any{"goal": g.Goal}, &out); res.IsError || out.Status != "VERIFIED_DONE" {
		t.Fatalf("goal_verify after the run: %+v %s", out, text(res))
	}
	if res := s.call("goal_status", map[string]any{}, &out); res.IsError || out.Status != "VERIFIED_DONE" || out.View["verdict"] == nil {
		t.Fatalf("goal_status: %+v %s", out, text(res))
	}
	if res := s.call("run", map[string]any{"executable": r.tool, "argv": []string{"ok"}, "step": "nope"}, &run); !strings.Contains(text(res), "ARGUMENTS_INVALID") {
		t.Fatalf("a run of an unknown step: %+v %s", run, text(res))
	}
}

// TestRunUnderContract: a run that a contract grant admits needs no
// approval, and its result names the grant (lease), the uses it has left
// and the contract; an argv the grammar refuses asks for an approval.
func TestRunUnderContract(t *testing.T) {
	r := newRig(t)
	g, err := r.operator.EnableContract(&wire.ContractEnable{Workspace: r.ws, Name: "npm-test", Uses: 2, TTLSeconds: 3600,
		Profile: wire.ProfileShort, Executable: r.tool})
	must(t, err)
	s := r.connect(Config{}, nil, "")
	var out actionOut
	if res := s.call("run", map[string]any{"executable": r.tool, "argv": []string{"test"}}, &out); res.IsError || out.Result == nil {
		t.Fatalf("run under the contract: %+v %s", out, text(res))
	}
	usedLease(t, "run", out.Result, g.ID, 1, "npm-test")
	var st actionOut
	s.call("status", map[string]any{"handle": *out.Handle}, &st)
	usedLease(t, "status", st.Result, g.ID, 1, "npm-test")
	s.call("wait", map[string]any{"handle": *out.Handle}, &st)
	usedLease(t, "wait", st.Result, g.ID, 1, "npm-test")
	out = actionOut{}
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"test", "--", "x"}}, &out)
	if out.Approval == nil || out.Result != nil {
		t.Fatalf("an argv outside the grammar ran: %+v", out)
	}
}

// usedLease requires that a (the result of the call named) names the
// lease its submit used, the uses it had left, and the contract (none
// for "").
func usedLease(t *testing.T, call string, a *view.Action, lease string, left uint32, contract string) {
	t.Helper()
	if a == nil || a.Lease == nil || *a.Lease != lease || a.UsesLeft == nil || *a.UsesLeft != left ||
		(a.Contract == nil) != (contract == "") || (a.Contract != nil && *a.Contract != contract) {
		t.Fatalf("%s: the result does not name lease %s with %d use(s) left and contract %q: %+v", call, lease, left, contract, a)
	}
}
