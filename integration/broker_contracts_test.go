//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestBrokerContractForRequest: the operator settles an agent's pending
// request by enabling a contract for it, as a scripted approver does
// with `broker contracts enable NAME --request ID`. `contracts offer`
// lists the contract with the command it covers; the agent waiting on
// the request learns it is approved with the grant as its lease, and its
// command (and later ones the grammar accepts) runs under the grant,
// each with its own receipt naming the contract. A contract that does
// not cover the request, and a second settling, are refused; `contracts
// revoke` refuses a plain lease.
func TestBrokerContractForRequest(t *testing.T) {
	need(t, "/usr/bin/git")
	d := shared(t)
	a := d.newAgent(t)
	if out, err := exec.Command("/usr/bin/git", "init", "-q", a.WS).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	status := a.request(wire.ProfileShort, "git", "status")
	s, err := a.cl.Submit(a.WS, status)
	if err != nil || s.Approval == nil {
		t.Fatalf("git status without a grant: %+v %v; want an approval request", s, err)
	}
	id := s.Approval.ID

	out, code := d.CLI("contracts", "offer", id, "--json")
	var offer struct {
		Request string `json:"request"`
		Offers  []struct {
			Name   string   `json:"name"`
			Usage  string   `json:"usage"`
			Covers []string `json:"covers"`
		} `json:"offers"`
	}
	if err := json.Unmarshal([]byte(out), &offer); code != 0 || err != nil || offer.Request != id || len(offer.Offers) != 1 ||
		offer.Offers[0].Name != "git" || len(offer.Offers[0].Covers) == 0 || offer.Offers[0].Covers[0] != "git status" {
		t.Fatalf("contracts offer %s: exit %d, %v\n%s", id, code, err, out)
	}
	if out, code := d.CLI("contracts", "offer", id); code != 0 || !strings.Contains(out, "git: ") || !strings.Contains(out, "\n    git status\n") ||
		!strings.Contains(out, "broker contracts enable git --request "+id) {
		t.Fatalf("contracts offer %s: exit %d\n%s", id, code, out)
	}
	refused(t, d, "contract go-test is for go", "contracts", "enable", "go-test", "--request", id)

	out, code = d.CLI("contracts", "enable", "git", "--request", id, "--uses", "3", "--json")
	var enabled struct {
		Grant struct {
			ID       string `json:"id"`
			Contract string `json:"contract"`
			UsesLeft uint32 `json:"uses_left"`
		} `json:"grant"`
		Request string `json:"request"`
	}
	if err := json.Unmarshal([]byte(out), &enabled); code != 0 || err != nil || enabled.Grant.Contract != "git" || enabled.Request != id {
		t.Fatalf("contracts enable git --request %s: exit %d, %v\n%s", id, code, err, out)
	}
	grant := enabled.Grant.ID
	st, err := a.cl.ApprovalWait(id, time.Minute)
	if err != nil || st.State != wire.RequestApproved || st.LeaseID != grant {
		t.Fatalf("approval_wait of the settled request: %+v %v; want approved on grant %s", st, err, grant)
	}
	h, res := a.admitted(status, grant, "git", 2)
	if res.Outcome != wire.Exited || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("git status under the grant: %+v\n%s", res, res.Stderr.Text)
	}
	if c := d.Receipt(h).Contract; c == nil || c.Grant != grant || c.Name != "git" {
		t.Fatalf("the receipt does not name the grant: %+v", c)
	}
	a.admitted(a.request(wire.ProfileShort, "git", "log", "--oneline"), grant, "git", 1)
	refused(t, d, "is already approved", "contracts", "enable", "git", "--request", id)

	lease := a.approvedLease(a.request(wire.ProfileShort, "/bin/true"))
	refused(t, d, "is a lease, not a contract grant", "contracts", "revoke", lease)
	if out, code := d.CLI("contracts", "revoke", grant); code != 0 {
		t.Fatalf("contracts revoke %s: exit %d\n%s", grant, code, out)
	}
	d.Verify()
}

// approvedLease submits req, approves the request it raises with one use
// and returns the lease.
func (a *agent) approvedLease(req wire.ActionRequest) string {
	a.t.Helper()
	s, err := a.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		a.t.Fatalf("submit %q: %+v %v; want an approval request", req.Argv, s, err)
	}
	l, err := a.d.dial().Approve(s.Approval.ID, 1, time.Hour)
	if err != nil {
		a.t.Fatal(err)
	}
	return l.ID
}

// refused runs `broker ARGS... --state STATE`, which must fail with exit
// status 1 and say want.
func refused(t *testing.T, d *brokerd, want string, args ...string) {
	t.Helper()
	cmd := exec.Command(bins.broker, append(args, "--state", d.State)...)
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), want) {
		t.Fatalf("broker %s: exit %d, want 1 saying %q:\n%s", strings.Join(args, " "), code, want, out)
	}
}

// One enable settles every waiting run it covers: two `broker run`s of
// different git commands wait on requests of their own; enabling git
// for the first approves both (the answer says 2, and the file the grant
// binds), and both run under the grant. A workspace symlink named git
// that leads to /bin/sh is not git: `./git status` is offered nothing,
// and enabling git for it is refused, the link and its target named.
func TestBrokerContractSettlesWaitingRuns(t *testing.T) {
	need(t, "/usr/bin/git")
	d := shared(t)
	a := d.newAgent(t)
	if out, err := exec.Command("/usr/bin/git", "init", "-q", a.WS).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	status := runWaiting(t, d, a.WS, "git", "status")
	diff := runWaiting(t, d, a.WS, "git", "diff")
	out, code := d.CLI("contracts", "enable", "git", "--request", status.id, "--json")
	var enabled struct {
		Grant struct {
			ID string `json:"id"`
		} `json:"grant"`
		Program struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
		} `json:"program"`
		Settled int `json:"settled"`
	}
	if err := json.Unmarshal([]byte(out), &enabled); code != 0 || err != nil || enabled.Settled != 2 ||
		enabled.Program.Path != "/usr/bin/git" || len(enabled.Program.SHA256) != 64 {
		t.Fatalf("contracts enable git --request %s: exit %d, %v\n%s", status.id, code, err, out)
	}
	for _, w := range []*waiting{status, diff} {
		if o := w.ran(0); o.Contract == nil || *o.Contract != "git" || o.Lease == nil || *o.Lease != enabled.Grant.ID {
			t.Fatalf("broker run of request %s after the enable: contract %v lease %v, want git on %s\n%s", w.id, o.Contract, o.Lease,
				enabled.Grant.ID, w.stdout)
		}
	}

	if err := os.Symlink("/bin/sh", filepath.Join(a.WS, "git")); err != nil {
		t.Fatal(err)
	}
	s, err := a.cl.Submit(a.WS, a.request(wire.ProfileShort, "./git", "status"))
	if err != nil || s.Approval == nil {
		t.Fatalf("./git status: %+v %v; want an approval request", s, err)
	}
	id := s.Approval.ID
	if out, code := d.CLI("contracts", "offer", id, "--json"); code != 0 || !strings.Contains(out, `"offers": []`) {
		t.Fatalf("contracts offer for ./git status, a link to /bin/sh: exit %d\n%s", code, out)
	}
	refused(t, d, "contract git is for git, which resolves here to /usr/bin/git (sha256 ", "contracts", "enable", "git", "--request", id)
	refused(t, d, "runs "+s.Approval.Identity.Executable.File.Path+" (sha256 ", "contracts", "enable", "git", "--request", id)
}
