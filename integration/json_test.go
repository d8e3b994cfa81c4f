//go:build linux

package integration

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"warrant/internal/jsonschema"
	"warrant/wire"
)

// jsonCommands is every `broker` command with the schema file
// (docs/schemas) its --json output follows; "" marks one that prints no
// JSON. A command is brought under the convention by one line here, its
// schema file, and one c.run of it in TestJSONConvention; the test fails
// while a command of `broker help` or a schema file has no line, or a
// line is never run.
var jsonCommands = map[string]string{
	"run":                 "run.v1.json",
	"status":              "capability.v1.json", // no handle: the stored capability report
	"status HANDLE":       "status.v1.json",
	"wait":                "status.v1.json",
	"cancel":              "cancel.v1.json",
	"output":              "output.v1.json",
	"probe":               "capability.v1.json",
	"approvals":           "approvals.v1.json",
	"approve":             "approve.v1.json",
	"deny":                "deny.v1.json",
	"leases":              "leases.v1.json",
	"revoke":              "revoke.v1.json",
	"actions":             "actions.v1.json",
	"resolve":             "resolve.v1.json",
	"receipts list":       "receipts.list.v1.json",
	"receipts show":       "receipts.show.v1.json",
	"receipts verify":     "receipts.verify.v1.json",
	"receipts checkpoint": "receipts.checkpoint.v1.json",
	"receipts export":     "receipts.export.v1.json",
	"receipts pubkey":     "receipts.pubkey.v1.json",
	"receipts prune":      "receipts.prune.v1.json",
	"caches list":         "caches.list.v1.json",
	"caches prune":        "caches.prune.v1.json",
	"toolchains":          "toolchains.v1.json",
	"contracts list":      "contracts.list.v1.json",
	"contracts show":      "contracts.show.v1.json",
	"contracts enable":    "contracts.enable.v1.json",
	"contracts revoke":    "contracts.revoke.v1.json",
	"contracts offer":     "contracts.offer.v1.json",
	"goals create":        "goals.create.v1.json",
	"goals show":          "goals.show.v1.json",
	"goals verify":        "goals.verify.v1.json",
	"goals revise":        "goals.revise.v1.json",
	"goals pause":         "goals.pause.v1.json",
	"goals resume":        "goals.resume.v1.json",
	"goals cancel":        "goals.cancel.v1.json",
	"goals attest":        "goals.attest.v1.json",
	"goals list":          "goals.list.v1.json",
	"serve":               "",
	"completion":          "",
	"mcp":                 "",
}

// jsonCheck runs commands and validates what they print.
type jsonCheck struct {
	t       *testing.T
	d       *brokerd
	schemas *jsonschema.Set
	seen    map[string]bool
}

// run runs `broker ARGS` as command (a key of jsonCommands), requires
// exit status want (-1: any) and that its output validates against the
// command's schema, and decodes it into v.
func (c *jsonCheck) run(command string, want int, v any, args ...string) {
	c.t.Helper()
	file, ok := jsonCommands[command]
	if !ok || file == "" {
		c.t.Fatalf("%s: not a JSON command of jsonCommands", command)
	}
	out, code := c.d.CLI(args...)
	if want >= 0 && code != want {
		c.t.Fatalf("broker %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
	}
	if err := c.schemas.Validate(file, []byte(out)); err != nil {
		c.t.Fatalf("broker %s does not follow %s: %v\n%s", strings.Join(args, " "), file, err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("broker %s: %v", strings.Join(args, " "), err)
	}
	c.seen[command] = true
}

// page is the part of a listing a test follows.
type page struct {
	Items []struct {
		ID     string  `json:"id"`
		Handle string  `json:"handle"`
		Index  *int64  `json:"index"`
		State  string  `json:"state"`
		Reason *string `json:"reason"`
	} `json:"items"`
	Truncated bool    `json:"truncated"`
	NextAfter *string `json:"next_after"`
}

// Every command's --json output, against a real daemon's state (actions
// that exited, were refused, timed a wait out, were cancelled and became
// unknown across a restart; approvals granted, denied and paged; leases
// revoked; the receipt log listed, shown, verified, exported and pruned;
// the probe), validates against its schema in docs/schemas, and every
// listing pages honestly.
func TestJSONConvention(t *testing.T) {
	schemas, err := jsonschema.Load("../docs/schemas")
	if err != nil {
		t.Fatal(err)
	}
	requireRegistryComplete(t, schemas)
	d := startBroker(t, "")
	a := d.newAgent(t)
	c := &jsonCheck{t: t, d: d, schemas: schemas, seen: map[string]bool{}}

	var ran struct {
		Handle    *string `json:"handle"`
		ReceiptID *string `json:"receipt_id"`
		Stdout    *struct {
			Text string `json:"text"`
		} `json:"stdout"`
	}
	c.run("run", 0, &ran, "run", "--approve", "--json", "--workspace", a.WS, "--", "/bin/echo", "hi")
	if ran.Handle == nil || ran.ReceiptID == nil || ran.Stdout == nil || ran.Stdout.Text != "hi\n" {
		t.Fatalf("run --json: %+v", ran)
	}
	h := *ran.Handle
	// A repeated call id answers the action it started, in the same object.
	for range 2 {
		c.run("run", 0, &ran, "run", "--approve", "--json", "--workspace", a.WS, "--session", "s-json", "--call-id", "c-json", "--", "/bin/echo", "call")
	}
	if ran.Stdout == nil || ran.Stdout.Text != "call\n" {
		t.Fatalf("run --call-id repeated: %+v", ran)
	}
	var refused struct {
		Handle *string         `json:"handle"`
		Stdout json.RawMessage `json:"stdout"`
		Gone   json.RawMessage `json:"group_gone"`
	}
	c.run("run", exitNotExecuted, &refused, "run", "--approve", "--json", "--workspace", "/", "--", "/bin/true")
	if refused.Handle != nil || string(refused.Stdout) != "null" || string(refused.Gone) != "null" {
		t.Fatalf("a refused run claims what nothing observed: %+v", refused)
	}

	var st struct {
		State       string          `json:"state"`
		WaitTimeout bool            `json:"wait_timeout"`
		Result      json.RawMessage `json:"result"`
	}
	c.run("status HANDLE", 0, &st, "status", h, "--json")
	c.run("wait", 0, &st, "wait", h, "--json")
	if st.State != "terminal" || st.WaitTimeout || string(st.Result) == "null" {
		t.Fatalf("wait on an ended action: %+v", st)
	}
	var retained struct {
		Streams []struct {
			Stream string `json:"stream"`
			Text   string `json:"text"`
		} `json:"streams"`
	}
	c.run("output", 0, &retained, "output", h, "--json")
	if len(retained.Streams) == 0 || retained.Streams[0].Stream != "stdout" || retained.Streams[0].Text != "hi\n" {
		t.Fatalf("output --json: %+v", retained)
	}
	sleeper := a.Start(a.request(wire.ProfileShort, "/bin/sleep", "300"), 2)
	c.run("wait", 0, &st, "wait", sleeper, "--timeout", "1ms", "--json")
	if !st.WaitTimeout || string(st.Result) != "null" {
		t.Fatalf("a wait that ran out: %+v", st)
	}
	var cancelled struct{ Result string }
	c.run("cancel", 0, &cancelled, "cancel", sleeper, "--json")
	if res := a.End(sleeper); cancelled.Result != "accepted" || res.Outcome != wire.CancelledReaped {
		t.Fatalf("cancel --json said %q; the action ended %s", cancelled.Result, res.Outcome)
	}

	// Two pending requests, paged one at a time; one approved, one denied.
	var ids []string
	for _, arg := range []string{"one", "two"} {
		s, err := a.cl.Submit(a.WS, a.request(wire.ProfileShort, "/bin/echo", arg))
		if err != nil || s.Approval == nil {
			t.Fatalf("submit: %+v %v", s, err)
		}
		ids = append(ids, s.Approval.ID)
	}
	var p page
	c.run("approvals", 0, &p, "approvals", "--json", "--limit", "1")
	if len(p.Items) != 1 || p.Items[0].ID != ids[0] || !p.Truncated || p.NextAfter == nil || *p.NextAfter != ids[0] {
		t.Fatalf("first page of approvals: %+v", p)
	}
	c.run("approvals", 0, &p, "approvals", "--json", "--limit", "1", "--after", *p.NextAfter)
	if len(p.Items) != 1 || p.Items[0].ID != ids[1] || p.Truncated || p.NextAfter != nil {
		t.Fatalf("last page of approvals: %+v", p)
	}
	var granted struct {
		Lease struct {
			ID       string `json:"id"`
			UsesLeft uint32 `json:"uses_left"`
		} `json:"lease"`
	}
	c.run("approve", 0, &granted, "approve", ids[0], "--uses", "3", "--json")
	var denied struct{}
	c.run("deny", 0, &denied, "deny", ids[1], "--reason", "not this one", "--json")
	// Nothing is pending; --all lists what became of the two, the last
	// decided first.
	c.run("approvals", 0, &p, "approvals", "--all", "--json")
	if len(p.Items) < 2 || p.Items[0].ID != ids[1] || p.Items[0].State != "denied" || p.Items[0].Reason == nil ||
		*p.Items[0].Reason != "not this one" || p.Items[1].ID != ids[0] || p.Items[1].State != "approved" ||
		p.Truncated || granted.Lease.UsesLeft != 3 {
		t.Fatalf("after approve and deny: %+v, lease %+v", p, granted)
	}
	c.run("leases", 0, &p, "leases", "--all", "--json")
	if len(p.Items) != 4 || p.Items[0].ID != granted.Lease.ID || p.Truncated {
		t.Fatalf("leases --all, newest first: %+v", p)
	}
	p = page{}
	c.run("leases", 0, &p, "leases", "--json")
	if len(p.Items) == 0 || len(p.Items) == 4 || p.Items[0].ID != granted.Lease.ID || p.Truncated {
		t.Fatalf("leases (the usable ones only), newest first: %+v", p)
	}
	for _, l := range p.Items {
		if l.State != "usable" {
			t.Fatalf("leases without --all lists a lease %s: %+v", l.State, p)
		}
	}
	c.run("leases", 0, &p, "leases", "--all", "--json", "--limit", "2")
	if len(p.Items) != 2 || !p.Truncated || *p.NextAfter != p.Items[1].ID {
		t.Fatalf("a page of two leases: %+v", p)
	}
	var revoked struct{}
	c.run("revoke", 0, &revoked, "revoke", granted.Lease.ID, "--json")
	c.run("actions", 0, &p, "actions", "--json", "--limit", "1")
	if len(p.Items) != 1 || p.Items[0].Handle != sleeper || !p.Truncated {
		t.Fatalf("a page of one action: %+v", p)
	}
	c.run("status", 0, &st, "status", "--json")
	c.run("caches list", 0, &p, "caches", "list", "--json")
	c.run("toolchains", 0, &p, "toolchains", "--json", "/bin/sh", "/usr/local/go/bin/go")
	var enabled struct {
		Grant struct {
			ID string `json:"id"`
		} `json:"grant"`
	}
	c.run("contracts enable", 0, &enabled, "contracts", "enable", "git", "--uses", "2", "--workspace", a.WS, "--json")
	c.run("contracts list", 0, &p, "contracts", "list", "--json")
	c.run("contracts show", 0, &p, "contracts", "show", "git", "--json")
	var underContract struct {
		Lease    *string `json:"lease"`
		UsesLeft *uint32 `json:"uses_left"`
		Contract *string `json:"contract"`
	}
	c.run("run", -1, &underContract, "run", "--json", "--workspace", a.WS, "--", "git", "status")
	if underContract.Contract == nil || *underContract.Contract != "git" || underContract.Lease == nil || *underContract.Lease != enabled.Grant.ID ||
		underContract.UsesLeft == nil || *underContract.UsesLeft != 1 {
		t.Fatalf("run --json under the git contract: %+v", underContract)
	}
	c.run("contracts revoke", 0, &p, "contracts", "revoke", enabled.Grant.ID, "--json")
	if s, err := a.cl.Submit(a.WS, a.request(wire.ProfileShort, "git", "status")); err != nil || s.Approval == nil {
		t.Fatalf("git status once its grant was revoked: %+v %v; want an approval request", s, err)
	} else {
		c.run("contracts offer", 0, &p, "contracts", "offer", s.Approval.ID, "--json")
	}

	// An action whose broker dies is unknown to the next one; the operator
	// resolves it.
	lost := a.Start(a.request(wire.ProfileShort, "/bin/sleep", "301"), 1)
	awaitState(t, a, lost, wire.StateRunning)
	d.kill()
	d2 := startBroker(t, d.State)
	c.d = d2
	c.run("actions", 0, &p, "actions", "--unknown", "--json")
	if len(p.Items) != 1 || p.Items[0].Handle != lost {
		t.Fatalf("actions --unknown: %+v", p)
	}
	var resolved struct{}
	c.run("resolve", 0, &resolved, "resolve", lost, "stop", "--note", "killed with its broker", "--json")

	// A goal through every goals command; its verdicts and the operator's
	// statement become entries of the log listed below.
	goalFile := filepath.Join(t.TempDir(), "goal.json")
	must(t, os.WriteFile(goalFile, []byte(`{"title":"the page renders","workspace":"`+a.WS+
		`","steps":[{"id":"review","criteria":[{"kind":"operator","prompt":"does it render?"}]}]}`), 0o600))
	var gv struct {
		Goal     string          `json:"goal"`
		Revision uint64          `json:"revision"`
		State    string          `json:"state"`
		Status   string          `json:"status"`
		Verdict  json.RawMessage `json:"verdict"`
	}
	c.run("goals create", 0, &gv, "goals", "create", goalFile, "--json")
	if gv.Revision != 1 || gv.Status != "UNVERIFIED" || string(gv.Verdict) != "null" {
		t.Fatalf("goals create --json: %+v", gv)
	}
	g := gv.Goal
	c.run("goals show", 0, &gv, "goals", "show", g, "--json")
	c.run("goals verify", 1, &gv, "goals", "verify", g, "--json")
	if gv.Status != "NOT_DONE" || string(gv.Verdict) == "null" {
		t.Fatalf("goals verify --json before the statement: %+v", gv)
	}
	c.run("goals attest", 0, &gv, "goals", "attest", g, "review", "it renders", "--json")
	c.run("goals verify", 0, &gv, "goals", "verify", g, "--json")
	if gv.Status != "VERIFIED_DONE" {
		t.Fatalf("goals verify --json after the statement: %+v", gv)
	}
	c.run("goals revise", 0, &gv, "goals", "revise", g, "--json")
	if gv.Revision != 2 || gv.Status != "UNVERIFIED" || string(gv.Verdict) != "null" {
		t.Fatalf("goals revise --json: %+v", gv)
	}
	for _, step := range []struct{ verb, state string }{{"pause", "paused"}, {"resume", "active"}, {"cancel", "cancelled"}} {
		c.run("goals "+step.verb, 0, &gv, "goals", step.verb, g, "--json")
		if gv.State != step.state {
			t.Fatalf("goals %s --json: %+v", step.verb, gv)
		}
	}
	c.run("goals create", 0, &gv, "goals", "create", goalFile, "--json")
	var goalPage struct {
		Items []struct {
			Goal string `json:"goal"`
		} `json:"items"`
		Truncated bool    `json:"truncated"`
		NextAfter *string `json:"next_after"`
	}
	c.run("goals list", 0, &goalPage, "goals", "list", "--json")
	var all []string
	for _, it := range goalPage.Items {
		all = append(all, it.Goal)
	}
	if len(all) < 2 || goalPage.Truncated || goalPage.NextAfter != nil || !slices.Contains(all, g) {
		t.Fatalf("goals list --json: %+v", goalPage)
	}
	// Page by page, one goal a page, the same goals in the same order.
	var paged []string
	for after := ""; ; {
		args := []string{"goals", "list", "--json", "--limit", "1"}
		if after != "" {
			args = append(args, "--after", after)
		}
		goalPage.Items = nil
		c.run("goals list", 0, &goalPage, args...)
		if len(goalPage.Items) != 1 {
			t.Fatalf("a page of one goal: %+v", goalPage)
		}
		paged = append(paged, goalPage.Items[0].Goal)
		if !goalPage.Truncated {
			if goalPage.NextAfter != nil {
				t.Fatalf("the last page names a next one: %+v", goalPage)
			}
			break
		}
		if goalPage.NextAfter == nil || *goalPage.NextAfter != goalPage.Items[0].Goal || len(paged) > len(all) {
			t.Fatalf("a truncated page of goals: %+v", goalPage)
		}
		after = *goalPage.NextAfter
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("goals paged one by one %v, listed whole %v", paged, all)
	}

	c.run("receipts list", 0, &p, "receipts", "list", "--json")
	entries := len(p.Items)
	if entries < 4 || p.Truncated {
		t.Fatalf("receipts list: %+v", p)
	}
	c.run("receipts list", 0, &p, "receipts", "list", "--json", "--limit", "2", "--after", "0")
	if len(p.Items) != 2 || *p.Items[0].Index != 1 || !p.Truncated || *p.NextAfter != "2" {
		t.Fatalf("a page of the receipt log: %+v", p)
	}
	var shown struct{ Verified bool }
	c.run("receipts show", 0, &shown, "receipts", "show", h, "--json")
	c.run("receipts show", 0, &shown, "receipts", "show", lost, "--json")
	// What an operator keeps elsewhere: the key and the newest checkpoint.
	var key struct {
		PEM string `json:"public_key_pem"`
	}
	c.run("receipts pubkey", 0, &key, "receipts", "pubkey", "--json")
	keyFile, cpFile := filepath.Join(t.TempDir(), "pub.pem"), filepath.Join(t.TempDir(), "checkpoint")
	note, _ := d2.CLI("receipts", "checkpoint")
	if err := errors.Join(os.WriteFile(keyFile, []byte(key.PEM), 0o600), os.WriteFile(cpFile, []byte(note), 0o600)); err != nil {
		t.Fatal(err)
	}
	var rep verified
	c.run("receipts verify", 0, &rep, "receipts", "verify", "--json")
	if !rep.OK || rep.Entries != int64(entries) || rep.Checkpoint == nil || rep.Checkpoint.Size != rep.Entries {
		t.Fatalf("receipts verify: %+v", rep)
	}
	var cp struct {
		Size int64 `json:"size"`
	}
	c.run("receipts checkpoint", 0, &cp, "receipts", "checkpoint", "--json")
	if cp.Size != rep.Entries {
		t.Fatalf("receipts checkpoint --json covers %d entries of %d", cp.Size, rep.Entries)
	}
	c.run("receipts verify", 0, &rep, "receipts", "verify", "--json", "--pubkey", keyFile, "--checkpoint", cpFile)
	if !rep.OK || rep.Anchor == nil || rep.Anchor.Size != rep.Entries || !rep.KeyGiven {
		t.Fatalf("receipts verify against what was kept: %+v", rep)
	}
	c.run("receipts export", 0, &p, "receipts", "export", "--json")
	if len(p.Items) != entries {
		t.Fatalf("receipts export --json: %d entries of %d", len(p.Items), entries)
	}

	// What needs the state directory to itself.
	d2.kill()
	var pruned struct{ Pruned []int64 }
	c.run("receipts prune", 0, &pruned, "receipts", "prune", "--older-than", "0s", "--json")
	if len(pruned.Pruned) == 0 {
		t.Fatalf("prune --older-than 0s deleted no body: %+v", pruned)
	}
	c.run("receipts verify", 0, &rep, "receipts", "verify", "--json")
	c.run("caches prune", 0, &p, "caches", "prune", "--all", "--json")
	c.run("probe", -1, &st, "probe", "--launcher", bins.launcher, "--json")

	for command, file := range jsonCommands {
		if file != "" && !c.seen[command] {
			t.Errorf("%s (%s) was never run", command, file)
		}
	}
}

// requireRegistryComplete requires a line of jsonCommands for every
// command `broker help` lists and every schema file but common's.
func requireRegistryComplete(t *testing.T, schemas *jsonschema.Set) {
	t.Helper()
	help, _ := exec.Command(bins.broker, "help").CombinedOutput()
	for line := range strings.Lines(string(help)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "broker" || f[1] == "COMMAND" {
			continue
		}
		found := false
		for command := range jsonCommands {
			found = found || strings.Fields(command)[0] == f[1]
		}
		if !found {
			t.Errorf("broker %s has no line in jsonCommands", f[1])
		}
	}
	used := map[string]bool{"common.v1.json": true}
	for _, file := range jsonCommands {
		used[file] = true
	}
	for _, file := range schemas.Files() {
		if !used[file] {
			t.Errorf("schema %s is no command's", file)
		}
	}
	if !slices.Contains(schemas.Files(), "run.v1.json") {
		t.Fatal("docs/schemas has no run.v1.json")
	}
}

// awaitState waits until the action is in state.
func awaitState(t *testing.T, a *agent, handle string, state wire.ActionState) {
	t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for time.Now().Before(deadline) {
		st, err := a.cl.Query(handle)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == state {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("action %s never became %s", handle, state)
}
