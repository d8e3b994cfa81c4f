//go:build linux

package integration

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"warrant/wire"
)

// enableContract runs `broker contracts enable NAME ARGS... --json` for
// the agent's workspace and returns the grant's id and uses left.
func (a *agent) enableContract(name string, args ...string) (string, uint32) {
	a.t.Helper()
	out, code := a.d.CLI(append([]string{"contracts", "enable", name, "--workspace", a.WS, "--json"}, args...)...)
	if code != 0 {
		a.t.Fatalf("contracts enable %s: exit %d\n%s", name, code, out)
	}
	var v struct {
		Grant struct {
			ID       string `json:"id"`
			Contract string `json:"contract"`
			UsesLeft uint32 `json:"uses_left"`
		} `json:"grant"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Grant.ID == "" || v.Grant.Contract != name {
		a.t.Fatalf("contracts enable %s: %v\n%s", name, err, out)
	}
	return v.Grant.ID, v.Grant.UsesLeft
}

// admitted submits req and requires that the contract grant admitted it
// (no approval asked) with left uses left; it returns the result.
func (a *agent) admitted(req wire.ActionRequest, grant, name string, left uint32) (string, *wire.Result) {
	a.t.Helper()
	s, err := a.cl.Submit(a.WS, req)
	if err != nil {
		a.t.Fatalf("submit %q: %v", req.Argv, err)
	}
	if s.Approval != nil || s.Handle == "" {
		a.t.Fatalf("submit %q asked for an approval; the %s grant should have admitted it", req.Argv, name)
	}
	if s.Lease != grant || s.Contract != name || s.UsesLeft != left {
		a.t.Fatalf("submit %q: lease %q contract %q uses left %d, want %q %q %d", req.Argv, s.Lease, s.Contract, s.UsesLeft, grant, name, left)
	}
	return s.Handle, a.End(s.Handle)
}

// refusedByContract submits req and requires an approval request for
// exactly its argv: the contract did not cover it.
func (a *agent) refusedByContract(req wire.ActionRequest) {
	a.t.Helper()
	s, err := a.cl.Submit(a.WS, req)
	if err != nil {
		a.t.Fatalf("submit %q: %v", req.Argv, err)
	}
	if s.Handle != "" || s.Approval == nil {
		a.t.Fatalf("submit %q ran (lease %s, contract %s); it should have asked for an approval", req.Argv, s.Lease, s.Contract)
	}
	if got := s.Approval.Identity.Argv; strings.Join(got, "\x00") != strings.Join(req.Argv, "\x00") {
		a.t.Fatalf("the approval request binds %q, not %q", got, req.Argv)
	}
}

// contractUses is what `broker contracts list --json` says the grant id
// of contract name has left (-1: not listed as usable).
func contractUses(t *testing.T, d *brokerd, name, id string) int {
	t.Helper()
	out, code := d.CLI("contracts", "list", "--json")
	if code != 0 {
		t.Fatalf("contracts list: exit %d\n%s", code, out)
	}
	var l struct {
		Items []struct {
			Name    string `json:"name"`
			Enabled []struct {
				ID       string `json:"id"`
				UsesLeft int    `json:"uses_left"`
			} `json:"enabled"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Items {
		for _, g := range c.Enabled {
			if c.Name == name && g.ID == id {
				return g.UsesLeft
			}
		}
	}
	return -1
}

// TestBrokerContracts: the library's go-test and git contracts, enabled
// by the operator, admit the argvs their grammar accepts without an
// exact approval, one use each, with the parse in the receipt; every
// other argv falls back to an exact approval and consumes nothing.
func TestBrokerContracts(t *testing.T) {
	const gotool = "/usr/local/go/bin/go"
	need(t, gotool)
	need(t, "/usr/bin/git")
	d := shared(t)
	a := d.newAgent(t)
	writeTree(t, a.WS, map[string]string{
		"go.mod":        "module example.com/x\n\ngo 1.22\n",
		"pkg/x.go":      "package pkg\n\nfunc X() int { return 1 }\n",
		"pkg/x_test.go": "package pkg\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {\n\tif X() != 1 {\n\t\tt.Fatal(X())\n\t}\n}\n",
	})
	if out, err := exec.Command("/usr/bin/git", "init", "-q", a.WS).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}

	// The contract names the bare `go`, which the sanitized PATH does not
	// have: the operator binds the toolchain's by its path, which the
	// agent requests.
	goGrant, uses := a.enableContract("go-test", "--uses", "3", "--profile", "long", "--executable", gotool)
	if uses != 3 {
		t.Fatalf("go-test grant has %d uses, want 3", uses)
	}
	gitGrant, _ := a.enableContract("git", "--uses", "5")

	h, res := a.admitted(a.request(wire.ProfileLong, gotool, "test", "-run", "TestX", "./pkg"), goGrant, "go-test", 2)
	if res.Outcome != wire.Exited || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("go test -run TestX ./pkg: %+v\n%s\n%s", res, res.Stdout.Text, res.Stderr.Text)
	}
	rc := d.Receipt(h)
	c := rc.Contract
	if c == nil || c.Grant != goGrant || rc.LeaseID != goGrant || c.Name != "go-test" || len(c.Digest) != 64 {
		t.Fatalf("the receipt does not name the grant: lease %s, contract %+v", rc.LeaseID, c)
	}
	want := []string{"test=literal", "-run=flag", "-run=string", "package=go-package"}
	var got []string
	for _, arg := range c.Args {
		got = append(got, arg.Slot+"="+arg.Kind)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || c.Args[3].Path != "pkg" {
		t.Fatalf("the receipt's parse is %v (%+v), want %v", got, c.Args, want)
	}
	if strings.Join(rc.Identity.Argv, " ") != "test -run TestX ./pkg" {
		t.Fatalf("the receipt's argv is %q", rc.Identity.Argv)
	}

	// Outside the grammar: an exact approval is asked for, and no use of
	// the grant is spent.
	for _, argv := range [][]string{
		{"test", "-exec", "/bin/sh", "./..."},
		{"test", "../outside"},
		{"test", "-toolexec", "x", "./..."},
	} {
		a.refusedByContract(a.request(wire.ProfileLong, gotool, argv...))
	}
	if n := contractUses(t, d, "go-test", goGrant); n != 2 {
		t.Fatalf("the go-test grant has %d uses left after the refusals, want 2", n)
	}
	a.admitted(a.request(wire.ProfileLong, gotool, "test", "-count=1", "./..."), goGrant, "go-test", 1)

	// git: no global option passes; status runs under the grant.
	a.refusedByContract(a.request(wire.ProfileShort, "git", "-c", "core.fsmonitor=x", "status"))
	_, res = a.admitted(a.request(wire.ProfileShort, "git", "status"), gitGrant, "git", 4)
	if res.Outcome != wire.Exited || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("git status: %+v\n%s", res, res.Stderr.Text)
	}

	// Revoked, the grant admits nothing.
	if out, code := d.CLI("contracts", "revoke", gitGrant); code != 0 {
		t.Fatalf("contracts revoke: exit %d\n%s", code, out)
	}
	a.refusedByContract(a.request(wire.ProfileShort, "git", "status"))
	if n := contractUses(t, d, "git", gitGrant); n != -1 {
		t.Fatalf("the revoked git grant is listed as usable (%d uses)", n)
	}
	d.Verify()
}
