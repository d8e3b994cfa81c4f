//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/wire"
)

// listedTool is a tool as tools/list shows it.
type listedTool struct {
	Name         string         `json:"name"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema"`
	Annotations  map[string]any `json:"annotations"`
}

// checkTools requires the seven agent tools, closed schemas and honest
// annotations.
func checkTools(t *testing.T, tools []listedTool) {
	t.Helper()
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		for _, s := range []map[string]any{tl.InputSchema, tl.OutputSchema} {
			if s["type"] != "object" || s["additionalProperties"] != false {
				t.Errorf("%s: a schema is not a closed object: %v", tl.Name, s)
			}
		}
		readOnly := tl.Name == "status" || tl.Name == "receipt" || strings.HasPrefix(tl.Name, "goal_")
		if tl.Annotations["readOnlyHint"] != readOnly || tl.Annotations["destructiveHint"] != !readOnly ||
			tl.Annotations["openWorldHint"] != false || tl.Annotations["idempotentHint"] != (tl.Name != "run") {
			t.Errorf("%s: annotations %v", tl.Name, tl.Annotations)
		}
	}
	slices.Sort(names)
	if want := []string{"cancel", "goal_status", "goal_verify", "receipt", "run", "status", "wait"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}

// pendingApprovals and leaseApprovals are what the operator's CLI lists.
func pendingApprovals(t *testing.T, d *brokerd) []string {
	t.Helper()
	out, code := d.CLI("approvals", "--json")
	if code != 0 {
		t.Fatalf("broker approvals: exit %d\n%s", code, out)
	}
	var ids []string
	for _, a := range wholeListing[struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}](t, "approvals", out) {
		if a.State == "pending" {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// leaseApprovals reads every page: a shared daemon's leases, spent ones
// included, run past one.
func leaseApprovals(t *testing.T, d *brokerd) []string {
	t.Helper()
	var ids []string
	args := []string{"leases", "--json"}
	for {
		out, code := d.CLI(args...)
		if code != 0 {
			t.Fatalf("broker leases: exit %d\n%s", code, out)
		}
		var l listing[struct {
			ApprovalID string `json:"approval_id"`
		}]
		if err := json.Unmarshal([]byte(out), &l); err != nil || l.Items == nil || l.Truncated != (l.NextAfter != nil) {
			t.Fatalf("broker leases --json printed no listing: %v\n%s", err, out)
		}
		for _, v := range l.Items {
			ids = append(ids, v.ApprovalID)
		}
		if l.NextAfter == nil {
			return ids
		}
		args = []string{"leases", "--json", "--after", *l.NextAfter}
	}
}

// approve approves request id through the operator CLI.
func approve(t *testing.T, d *brokerd, id string, uses int) {
	t.Helper()
	if out, code := d.CLI("approve", id, "--uses", strconv.Itoa(uses)); code != 0 {
		t.Fatalf("broker approve %s: exit %d\n%s", id, code, out)
	}
}

// TestMCPTypeScriptClient drives `broker mcp`, against a daemon, with the
// official TypeScript SDK: the tools and their schemas; an unapproved
// command returns approval_required, the operator approves it through
// the CLI, wait runs it, its artefact is on the host, a second run goes
// straight through the lease, and its receipt verifies; a long action
// shows progress, is cancelled and its whole group is gone; malformed
// arguments are tool errors while the server keeps serving; no tool name,
// argument or elicitation answer reaches an operator verb.
func TestMCPTypeScriptClient(t *testing.T) {
	d := shared(t)
	ag := d.newAgent(t)
	ws := ag.WS
	c := startTS(t, mcpServer(d.State, ws))

	var list struct {
		Tools []listedTool `json:"tools"`
	}
	c.do(map[string]any{"op": "list"}, &list)
	checkTools(t, list.Tools)

	t.Run("approval, then run, artefact and receipt", func(t *testing.T) {
		args := map[string]any{"executable": "sh", "argv": []string{"-c", "echo made > artefact.txt; echo done"}}
		r := c.call("run", args, false)
		a := r.action(t)
		if a.State != "approval_required" || a.Approval == nil || a.Result != nil || a.Handle != nil {
			t.Fatalf("an unapproved command: %+v", a)
		}
		id := a.Approval.RequestID
		if a.Approval.ApproveCommand != "broker approve "+id+" --state "+d.State ||
			!strings.Contains(r.text(), "A human must approve this command outside the agent") {
			t.Fatalf("the result does not say what the human must do: %s", r.text())
		}
		if _, err := os.Stat(filepath.Join(ws, "artefact.txt")); err == nil {
			t.Fatal("the artefact exists before approval")
		}
		approve(t, d, id, 2)
		a = c.action("wait", map[string]any{"approval_id": id})
		if a.State != "terminal" || a.Result.Outcome != "exited" || *a.Result.ExitCode != 0 || a.Result.Stdout.Text != "done\n" {
			t.Fatalf("after approval: %+v %+v", a, a.Result)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "artefact.txt")); err != nil || string(b) != "made\n" {
			t.Fatalf("the artefact on the host: %q %v", b, err)
		}
		if r := a.Result; r.Lease == nil || r.UsesLeft == nil || *r.UsesLeft != 1 || r.Contract != nil {
			t.Fatalf("the result does not name its lease with 1 use left: %+v", r)
		}
		again := c.action("run", args)
		if again.State != "terminal" || again.Result.Outcome != "exited" || *again.Handle == *a.Handle {
			t.Fatalf("a second run under the lease: %+v", again)
		}
		if r := again.Result; r.Lease == nil || *r.Lease != *a.Result.Lease || *r.UsesLeft != 0 {
			t.Fatalf("the second run does not name the same lease with 0 uses left: %+v", r)
		}
		if st := c.action("status", map[string]any{"handle": *again.Handle}); st.Result.Lease == nil || *st.Result.Lease != *a.Result.Lease || *st.Result.UsesLeft != 0 {
			t.Fatalf("status does not name the lease: %+v", st.Result)
		}
		rid := *a.Result.ReceiptID
		rc := c.call("receipt", map[string]any{"id": rid}, false)
		var got struct {
			ReceiptID string `json:"receipt_id"`
			Verified  bool   `json:"verified"`
		}
		if err := json.Unmarshal(rc.Result.StructuredContent, &got); err != nil || rc.Result.IsError || !got.Verified || got.ReceiptID != rid {
			t.Fatalf("receipt tool: %+v %v %s", got, err, rc.text())
		}
		if d.Receipt(rid).Action != *a.Handle || !strings.HasPrefix(rc.text(), "Receipt "+rid) {
			t.Fatalf("the receipt tool shows another receipt than the CLI: %.300s", rc.text())
		}
	})

	t.Run("under a contract", func(t *testing.T) {
		need(t, "/usr/bin/git")
		if out, err := exec.Command("/usr/bin/git", "init", "-q", ws).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		grant, _ := ag.enableContract("git", "--uses", "3")
		a := c.action("run", map[string]any{"executable": "git", "argv": []string{"status", "--short"}})
		if r := a.Result; a.State != "terminal" || r.Outcome != "exited" || r.Lease == nil || *r.Lease != grant ||
			*r.UsesLeft != 2 || r.Contract == nil || *r.Contract != "git" {
			t.Fatalf("git status under the git contract: %+v %+v", a, r)
		}
		if st := c.action("wait", map[string]any{"handle": *a.Handle}); st.Result.Contract == nil || *st.Result.Contract != "git" || *st.Result.Lease != grant {
			t.Fatalf("wait does not name the grant: %+v", st.Result)
		}
	})

	t.Run("progress, cancel, group gone", func(t *testing.T) {
		mark := token(t)
		t.Cleanup(func() { killMarked(t, mark) })
		a := c.action("run", map[string]any{"executable": python(t), "argv": []string{"-c", sleeper, "up", mark}, "wait_ms": 0})
		approve(t, d, a.Approval.RequestID, 1)
		a = c.action("wait", map[string]any{"approval_id": a.Approval.RequestID, "wait_ms": 0})
		if a.Handle == nil {
			t.Fatalf("no handle after approval: %+v", a)
		}
		handle := *a.Handle
		awaitFile(t, filepath.Join(ws, "up"))
		w := c.call("wait", map[string]any{"handle": handle, "wait_ms": 2500}, true)
		if st := w.action(t); w.Result.IsError || st.State != "running" || !st.WaitTimeout {
			t.Fatalf("a wait on a running action: %+v %s", st, w.text())
		}
		if len(w.Progress) == 0 || !strings.Contains(w.Progress[len(w.Progress)-1].Message, handle) {
			t.Fatalf("progress notifications: %+v", w.Progress)
		}
		if n := len(marked(t, mark)); n < 2 {
			t.Fatalf("the action and its child should run; the scan sees %d", n)
		}
		cr := c.call("cancel", map[string]any{"handle": handle}, false)
		if cr.Result.IsError || !strings.Contains(string(cr.Result.StructuredContent), `"accepted"`) {
			t.Fatalf("cancel: %s", cr.text())
		}
		a = c.action("wait", map[string]any{"handle": handle})
		if a.State != "terminal" || a.Result.Outcome != "cancelled_reaped" || a.Result.GroupGone == nil || !*a.Result.GroupGone {
			t.Fatalf("after cancel: %+v", a.Result)
		}
		if left := marked(t, mark); len(left) > 0 {
			t.Fatalf("process(es) %v of the cancelled action are alive", left)
		}
		if rc := d.Receipt(*a.Result.ReceiptID); rc.GroupGone == nil || rc.Outcome != wire.CancelledReaped {
			t.Fatalf("receipt: %+v", rc)
		}
	})

	t.Run("malformed arguments", func(t *testing.T) {
		huge := make([]string, 10000)
		for i := range huge {
			huge[i] = strings.Repeat("h", 200)
		}
		for name, bad := range map[string]struct {
			tool string
			args map[string]any
		}{
			"an extra field":    {"run", map[string]any{"executable": "true", "uses": 100}},
			"a wrong type":      {"run", map[string]any{"executable": "true", "argv": "-c true"}},
			"a number for text": {"run", map[string]any{"executable": 7}},
			"a huge argv":       {"run", map[string]any{"executable": "true", "argv": huge}},
			"a NUL byte":        {"run", map[string]any{"executable": "true", "argv": []string{"a\x00b"}}},
			"no arguments":      {"status", map[string]any{}},
			"wait_ms negative":  {"wait", map[string]any{"handle": "a-1", "wait_ms": -1}},
		} {
			r := c.call(bad.tool, bad.args, false)
			if !r.Result.IsError || !strings.HasPrefix(r.text(), "ARGUMENTS_INVALID: ") {
				t.Errorf("%s: want an ARGUMENTS_INVALID tool error, got %.300s", name, r.text())
			}
		}
		var again struct {
			Tools []listedTool `json:"tools"`
		}
		c.do(map[string]any{"op": "list"}, &again)
		if len(again.Tools) != 7 {
			t.Fatalf("the server stopped serving: %+v", again)
		}
	})

	t.Run("no operator verb", func(t *testing.T) {
		a := c.action("run", map[string]any{"executable": "sh", "argv": []string{"-c", "echo never"}})
		id := a.Approval.RequestID
		for _, verb := range []string{"approve", "deny", "revoke", "resolve", "leases", "approvals"} {
			var r called
			c.do(map[string]any{"op": "call", "name": verb, "arguments": map[string]any{"id": id, "request_id": id, "uses": 1}}, &r)
			if r.Error == nil {
				t.Errorf("a tool named %s answered: %s", verb, r.text())
			}
		}
		for _, args := range []map[string]any{
			{"executable": "sh", "argv": []string{"-c", "echo never"}, "approve": true},
			{"executable": bins.broker, "argv": []string{"approve", id, "--state", d.State}},
		} {
			r := c.call("run", args, false)
			if !r.Result.IsError && r.action(t).State != "approval_required" {
				t.Errorf("run %v: %s", args, r.text())
			}
		}
		w := c.action("wait", map[string]any{"approval_id": id, "wait_ms": 1500})
		if w.State != "approval_required" || !w.WaitTimeout {
			t.Fatalf("wait on a pending request: %+v", w)
		}
		var el struct {
			Elicited []struct {
				Message string `json:"message"`
			} `json:"elicited"`
		}
		c.do(map[string]any{"op": "elicited"}, &el)
		if len(el.Elicited) == 0 || !strings.Contains(el.Elicited[len(el.Elicited)-1].Message, "broker approve "+id) {
			t.Fatalf("the human was not shown the request through elicitation: %+v", el)
		}
		if !slices.Contains(pendingApprovals(t, d), id) || slices.Contains(leaseApprovals(t, d), id) {
			t.Fatalf("request %s is no longer pending, or has a lease, after the agent's attempts", id)
		}
		if out, code := d.CLI("deny", id); code != 0 {
			t.Fatalf("deny: %s", out)
		}
		r := c.call("wait", map[string]any{"approval_id": id}, false)
		if !r.Result.IsError || !strings.HasPrefix(r.text(), "APPROVAL_DENIED: ") {
			t.Fatalf("wait after a denial: %s", r.text())
		}
	})
}

// TestMCPEmbeddedBroker: with no daemon on the state directory, `broker
// mcp` serves an embedded broker there, which the operator's CLI reaches;
// when the client disconnects, an action it left running is cancelled and
// its group is gone before the server exits.
func TestMCPEmbeddedBroker(t *testing.T) {
	d := &brokerd{t: t, State: filepath.Join(t.TempDir(), "state")} // for its CLI: nothing is started
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	c := startTS(t, mcpServer(d.State, ws))
	a := c.action("run", map[string]any{"executable": "/bin/true"})
	approve(t, d, a.Approval.RequestID, 1)
	if a = c.action("wait", map[string]any{"approval_id": a.Approval.RequestID}); a.Result == nil || a.Result.Outcome != "exited" {
		t.Fatalf("through the embedded broker: %+v", a)
	}

	mark := token(t)
	t.Cleanup(func() { killMarked(t, mark) })
	a = c.action("run", map[string]any{"executable": python(t), "argv": []string{"-c", sleeper, "up", mark}, "wait_ms": 0})
	approve(t, d, a.Approval.RequestID, 1)
	a = c.action("wait", map[string]any{"approval_id": a.Approval.RequestID, "wait_ms": 0})
	awaitFile(t, filepath.Join(ws, "up"))
	c.close()
	if left := marked(t, mark); len(left) > 0 {
		t.Fatalf("process(es) %v outlived broker mcp\n%s", left, c.log)
	}
	if rc := d.Receipt(*a.Handle); rc.Outcome != wire.CancelledReaped || rc.GroupGone == nil {
		t.Fatalf("the action left running at disconnect: %s, group gone %+v\n%s", rc.Outcome, rc.GroupGone, c.log)
	}
}

// TestMCPInspectorCLI drives `broker mcp` with the Inspector's CLI:
// tools/list (and its schema portability check), tools/call of run (its
// request approved after the one-shot client exited), status and
// receipt, a malformed call, and a tool named for an operator verb.
func TestMCPInspectorCLI(t *testing.T) {
	d := shared(t)
	ws := d.newAgent(t).WS
	server := mcpServer(d.State, ws)

	out, errs, code := inspector(t, server, "--method", "tools/list")
	var list struct {
		Tools []listedTool `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("tools/list: exit %d, %v\n%s%s", code, err, out, errs)
	}
	checkTools(t, list.Tools)
	if _, errs, code := inspector(t, server, "--method", "tools/list", "--strict"); code != 0 {
		t.Fatalf("the Inspector finds error-severity schema problems (exit %d):\n%s", code, errs)
	}

	call := func(tool string, args ...string) (*mcpAction, string, bool) {
		t.Helper()
		cmd := []string{"--method", "tools/call", "--tool-name", tool}
		for _, a := range args {
			cmd = append(cmd, "--tool-arg", a)
		}
		out, errs, code := inspector(t, server, cmd...)
		var r struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent *mcpAction `json:"structuredContent"`
			IsError           bool       `json:"isError"`
		}
		// The Inspector exits 5 after printing a result with isError.
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Content) == 0 || code != map[bool]int{false: 0, true: 5}[r.IsError] {
			t.Fatalf("tools/call %s: exit %d, %v\n%s%s", tool, code, err, out, errs)
		}
		return r.StructuredContent, r.Content[0].Text, r.IsError
	}
	a, _, _ := call("run", "executable=/bin/echo", `argv=["inspected"]`)
	if a.State != "approval_required" {
		t.Fatalf("run: %+v", a)
	}
	id := a.Approval.RequestID
	// Each Inspector call is a server of its own, gone when it exits; its
	// request outlives it, and the next call of the same command runs
	// under the approval.
	approve(t, d, id, 1)
	a, text, isErr := call("run", "executable=/bin/echo", `argv=["inspected"]`)
	if isErr || a.State != "terminal" || a.Result.Stdout.Text != "inspected\n" {
		t.Fatalf("run under the lease: %+v %s", a, text)
	}
	if st, _, _ := call("status", "handle="+*a.Handle); st.State != "terminal" || *st.Result.ReceiptID != *a.Result.ReceiptID {
		t.Fatalf("status: %+v", st)
	}
	if _, text, isErr := call("receipt", "id="+*a.Result.ReceiptID); isErr || !strings.Contains(text, "verified") {
		t.Fatalf("receipt: %s", text)
	}
	if _, text, isErr := call("run", "executable=/bin/echo", "bogus=1"); !isErr || !strings.HasPrefix(text, "ARGUMENTS_INVALID: ") {
		t.Fatalf("a malformed call: %s", text)
	}
	if out, _, code := inspector(t, server, "--method", "tools/call", "--tool-name", "approve", "--tool-arg", "id="+id); code == 0 {
		t.Fatalf("a tool named approve answered:\n%s", out)
	}
}

// awaitFile waits for a target to write path.
func awaitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(strings.Fields(string(b))) >= 2 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// TestMCPRevision20260728: the Go SDK's client negotiates protocol
// revision 2026-07-28 (the stateless model: server/discover, no
// initialize) with `broker mcp` over stdio, declaring the tasks
// extension; the server offers no tasks (the SDK has none), so the flow
// is run, approval_required, the operator's approval, wait: the command
// runs, its result names its lease, and status agrees.
func TestMCPRevision20260728(t *testing.T) {
	const revision, tasks = "2026-07-28", "io.modelcontextprotocol/tasks"
	d := shared(t)
	ws := d.newAgent(t).WS
	caps := &sdk.ClientCapabilities{}
	caps.AddExtension(tasks, map[string]any{})
	c := startGo(t, mcpServer(d.State, ws), revision, caps)
	init := c.cs.InitializeResult()
	if init.ProtocolVersion != revision || init.ServerInfo == nil || init.ServerInfo.Name != "warrant" {
		t.Fatalf("negotiated %q with %+v, want revision %s with warrant", init.ProtocolVersion, init.ServerInfo, revision)
	}
	if _, ok := init.Capabilities.Extensions[tasks]; ok || init.Capabilities.Tools == nil {
		t.Fatalf("server capabilities %+v: want tools and no tasks extension", init.Capabilities)
	}
	checkTools(t, c.tools())

	args := map[string]any{"executable": "sh", "argv": []string{"-c", "echo made > artefact.txt; echo done"}}
	a := c.action("run", args)
	if a.State != "approval_required" || a.Approval == nil || a.Handle != nil {
		t.Fatalf("an unapproved command: %+v", a)
	}
	if _, err := os.Stat(filepath.Join(ws, "artefact.txt")); err == nil {
		t.Fatal("the artefact exists before approval")
	}
	if a = c.action("wait", map[string]any{"approval_id": a.Approval.RequestID, "wait_ms": 0}); a.State != "approval_required" || !a.WaitTimeout {
		t.Fatalf("wait before approval: %+v", a)
	}
	approve(t, d, a.Approval.RequestID, 2)
	a = c.action("wait", map[string]any{"approval_id": a.Approval.RequestID})
	if a.State != "terminal" || a.Result.Outcome != "exited" || *a.Result.ExitCode != 0 || a.Result.Stdout.Text != "done\n" {
		t.Fatalf("after approval: %+v %+v", a, a.Result)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "artefact.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the artefact on the host: %q %v", b, err)
	}
	if a.Result.Lease == nil || a.Result.UsesLeft == nil || *a.Result.UsesLeft != 1 || a.Result.Contract != nil {
		t.Fatalf("the result does not name its lease with 1 use left: %+v", a.Result)
	}
	st := c.action("status", map[string]any{"handle": *a.Handle})
	if st.State != "terminal" || st.Result.Lease == nil || *st.Result.Lease != *a.Result.Lease || *st.Result.UsesLeft != 1 {
		t.Fatalf("status: %+v", st.Result)
	}
}

// inspectorDocLines are the Inspector command lines docs/agents.md gives,
// each split into words as a POSIX shell would (plain words and
// single-quoted text only).
func inspectorDocLines(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "    npx @modelcontextprotocol/inspector --cli "); ok {
			lines = append(lines, append([]string{"npx", "@modelcontextprotocol/inspector", "--cli"}, shellWords(t, rest)...))
		}
	}
	return lines
}

// shellWords splits s at spaces outside single quotes; any other shell
// syntax fails the test (the doc's lines must need none).
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case quoted:
			w.WriteRune(r)
		case r == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case strings.ContainsRune("\"\\$`;&|<>(){}*?~#", r):
			t.Fatalf("the doc's command line %q has shell syntax %q this test does not read", s, r)
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("the doc's command line %q has an unclosed quote", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestMCPInspectorDocLines runs the Inspector command lines of
// docs/agents.md as written there — npx, the default state directory,
// the broker at /usr/local/bin/broker and the project at
// /path/to/project standing for this run's — against a daemon: the
// first lists the tools; the second asks for an approval and exits; the
// operator approves the request its one-shot client left, and the same
// line then runs the command under the lease.
func TestMCPInspectorDocLines(t *testing.T) {
	needNodeModules(t)
	lines := inspectorDocLines(t)
	if len(lines) != 2 {
		t.Fatalf("docs/agents.md gives %d Inspector command lines, want 2 (tools/list, tools/call run): %q", len(lines), lines)
	}
	home := t.TempDir()
	d := startBroker(t, filepath.Join(home, ".local", "state", "warrant")) // the default state directory under HOME
	ws := d.newAgent(t).WS
	mcp, err := filepath.Abs(mcpDir)
	if err != nil {
		t.Fatal(err)
	}
	line := func(i int) (string, int) {
		t.Helper()
		argv := slices.Clone(lines[i])
		for j, w := range argv {
			argv[j] = map[string]string{"/usr/local/bin/broker": bins.broker, "/path/to/project": ws}[w]
			if argv[j] == "" {
				argv[j] = w
			}
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = mcp // npx finds the pinned Inspector there, and never fetches (offline)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "npm_config_offline=true", "npm_config_update_notifier=false"}
		out, errs, code := outputs(t, cmd)
		if code != 0 && code != 5 { // 5: a tool result with isError
			t.Fatalf("%q: exit %d\n%s%s", lines[i], code, out, errs)
		}
		return out, code
	}

	out, _ := line(0)
	var list struct {
		Tools []listedTool `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	checkTools(t, list.Tools)

	run := func() *mcpAction {
		t.Helper()
		out, code := line(1)
		var r struct {
			StructuredContent *mcpAction `json:"structuredContent"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.StructuredContent == nil {
			t.Fatalf("tools/call run: exit %d, %v\n%s", code, err, out)
		}
		return r.StructuredContent
	}
	a := run()
	if a.State != "approval_required" || a.Approval == nil {
		t.Fatalf("the first run: %+v", a)
	}
	if out, code := d.CLI("approve", a.Approval.RequestID); code != 0 {
		t.Fatalf("broker approve %s, after its one-shot client exited: exit %d\n%s", a.Approval.RequestID, code, out)
	}
	if a = run(); a.State != "terminal" || a.Result.Outcome != "exited" || a.Result.Stdout.Text != "hello\n" || a.Result.Lease == nil {
		t.Fatalf("the same line after approval: %+v %+v", a, a.Result)
	}
}

// TestMCPApprovalOutlivesItsClient: an agent whose MCP connection ends
// after approval_required (an agent that restarts its server) leaves its
// request pending; the operator approves it with no requester connected,
// and a new connection's run of the same command runs under that
// approval's lease, once.
func TestMCPApprovalOutlivesItsClient(t *testing.T) {
	d := shared(t)
	ws := d.newAgent(t).WS
	args := map[string]any{"executable": "sh", "argv": []string{"-c", "echo ran >> outlived.txt"}}
	first := startGo(t, mcpServer(d.State, ws), "", nil)
	a := first.action("run", args)
	if a.State != "approval_required" || a.Approval == nil {
		t.Fatalf("an unapproved command: %+v", a)
	}
	id := a.Approval.RequestID
	if err := first.cs.Close(); err != nil { // closes the server's stdin and waits for it to exit
		t.Fatalf("close the first connection: %v\n%s", err, first.log)
	}
	if !slices.Contains(pendingApprovals(t, d), id) {
		t.Fatalf("request %s is no longer pending once its client left", id)
	}
	out, code := d.CLI("approve", id, "--json")
	var granted struct {
		Lease struct {
			ID string `json:"id"`
		} `json:"lease"`
	}
	if err := json.Unmarshal([]byte(out), &granted); code != 0 || err != nil || granted.Lease.ID == "" {
		t.Fatalf("broker approve %s with no requester connected: exit %d, %v\n%s", id, code, err, out)
	}

	second := startGo(t, mcpServer(d.State, ws), "", nil)
	a = second.action("run", args)
	if r := a.Result; a.State != "terminal" || r.Outcome != "exited" || *r.ExitCode != 0 || r.Lease == nil || *r.Lease != granted.Lease.ID || *r.UsesLeft != 0 {
		t.Fatalf("the same command on a new connection, after approval: %+v %+v, want it under lease %s", a, r, granted.Lease.ID)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "outlived.txt")); err != nil || string(b) != "ran\n" {
		t.Fatalf("the command ran other than once: %q %v", b, err)
	}
	if a = second.action("run", args); a.State != "approval_required" {
		t.Fatalf("a third run after the one use: %+v", a)
	}
}
