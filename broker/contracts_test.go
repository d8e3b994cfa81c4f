package broker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/broker/internal/contract"
	"warrant/broker/internal/journal"
	"warrant/wire"
)

// The predicate a contract's paths are checked with refuses every .git
// and every protect.Paths name at any depth, seen from the workspace
// root (the cwd's own components included), and nothing else.
func TestProtectedBeneath(t *testing.T) {
	for _, c := range []struct {
		cwd, rel string
		want     bool
	}{
		{".", ".", false}, {".", "pkg/x.go", false}, {"sub", "a.txt", false}, {".", ".gitignore", false},
		{".", ".git", true}, {".", ".git/hooks/pre-commit", true}, {"sub", ".git/config", true},
		{".git", ".", true}, {".", ".envrc", true}, {"a", "b/.vscode/settings.json", true},
		{".", ".husky/pre-commit", true}, {".", ".mcp.json", true}, {".", "x/.gitmodules", true},
	} {
		if got := protectedBeneath(c.cwd)(c.rel); got != c.want {
			t.Errorf("cwd %q, path %q: protected %v, want %v", c.cwd, c.rel, got, c.want)
		}
	}
}

// gitRequest is a request of git, found on the sanitized PATH as the git
// contract's executable is, with argv, in the workspace's root. Nothing
// runs: the rig's executor holds every launch.
func (r *rig) gitRequest(argv ...string) wire.ActionRequest {
	r.t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		r.t.Skip("no git here")
	}
	return wire.ActionRequest{Executable: "git", Argv: argv, Cwd: ".", Profile: wire.ProfileShort}
}

// goTree makes a Go root of the documented layout at root (VERSION,
// src/runtime, bin/go, a stand-in that runs /bin/true) and returns its
// go, by its canonical path.
func goTree(t *testing.T, root string) string {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(root, "src", "runtime"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "VERSION"), []byte("go1.22.0\n"), 0o644))
	root, err := filepath.EvalSymlinks(root)
	must(t, err)
	copyFile(t, "/bin/true", filepath.Join(root, "bin", "go"))
	return filepath.Join(root, "bin", "go")
}

// enable enables contract name for request id with three uses.
func (r *rig) enable(name, id, executable string) (*wire.LeaseView, error) {
	return r.cl.EnableContract(&wire.ContractEnable{Name: name, Request: id, Executable: executable, Uses: 3, TTLSeconds: 3600})
}

// refusedEnable requires that enabling name for request id is refused
// with ARGUMENTS_INVALID saying each of want, and that nothing was
// granted or decided.
func (r *rig) refusedEnable(name, id, executable string, want ...string) {
	r.t.Helper()
	before := r.grants()
	_, err := r.enable(name, id, executable)
	wantCode(r.t, err, wire.CodeArgumentsInvalid)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			r.t.Errorf("enable %s for %s: %v; want it to say %q", name, id, err, w)
		}
	}
	if n := r.grants(); n != before || !r.pending(id) {
		r.t.Fatalf("after the refusal: %d grants (was %d), %s pending %v", n, before, id, r.pending(id))
	}
}

// offered is the names of the contracts offered for request id, each
// with the file it would bind, which must be the request's.
func (r *rig) offered(v *wire.ApprovalView) []string {
	r.t.Helper()
	offers, err := r.cl.ContractOffer(v.ID)
	must(r.t, err)
	var names []string
	for _, o := range offers {
		if f := v.Identity.Executable.File; o.Program.Path != f.Path || !bytes.Equal(o.Program.SHA256, f.SHA256) {
			r.t.Errorf("contract %s is offered for %s binding %+v, not the file it runs (%s)", o.Name, v.ID, o.Program, f.Path)
		}
		names = append(names, o.Name)
	}
	return names
}

// grants is how many contract grants the broker holds.
func (r *rig) grants() int {
	r.t.Helper()
	l, err := r.cl.List(wire.ListContractGrants, false)
	must(r.t, err)
	return len(l.Leases)
}

// Enabling a contract for a pending request settles it: the requester
// waiting on it learns it is approved with the grant as its lease, its
// command then runs under the grant (whose receipt names the contract),
// and so does any other argv the grammar accepts. A contract that does
// not accept the request's argv, or does not fit its executable, and
// terms that disagree with the request are refused, and nothing is
// granted or decided.
func TestEnableContractForRequest(t *testing.T) {
	r := newRig(t)
	bad := r.wantApproval(r.gitRequest("-c", "core.fsmonitor=x", "status"))
	refusals := map[string]wire.ContractEnable{
		"does not accept argument 1 \"-c\"": {Name: "git", Request: bad.ID},
		"contract make is for make":         {Name: "make", Request: bad.ID},
	}
	requester, v := r.requester(r.gitRequest("status"))
	defer requester.Close()
	refusals["not /tmp"] = wire.ContractEnable{Name: "git", Request: v.ID, Workspace: "/tmp"}
	refusals["not standard"] = wire.ContractEnable{Name: "git", Request: v.ID, Profile: wire.ProfileStandard}
	refusals["is not the file request "+v.ID+" runs, "+v.Identity.Executable.File.Path] = wire.ContractEnable{Name: "git", Request: v.ID, Executable: r.tool}
	for want, m := range refusals {
		m.Uses, m.TTLSeconds = 3, 3600
		_, err := r.cl.EnableContract(&m)
		wantCode(t, err, wire.CodeArgumentsInvalid)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("enable %s for %s: %v; want it to say %q", m.Name, m.Request, err, want)
		}
	}
	if n := r.grants(); n != 0 || !r.pending(v.ID) || !r.pending(bad.ID) {
		t.Fatalf("after the refusals: %d grants, %s pending %v, %s pending %v", n, v.ID, r.pending(v.ID), bad.ID, r.pending(bad.ID))
	}

	waited := make(chan *wire.ApprovalState, 1)
	go func() {
		st, err := requester.ApprovalWait(v.ID, time.Minute)
		if err != nil {
			t.Error(err)
		}
		waited <- st
	}()
	g, err := r.cl.EnableContract(&wire.ContractEnable{Name: "git", Request: v.ID, Uses: 3, TTLSeconds: 3600,
		Workspace: r.workspace, Profile: wire.ProfileShort})
	must(t, err)
	if f := v.Identity.Executable.File; g.Contract != "git" || g.UsesLeft != 3 || g.Profile != wire.ProfileShort || g.Settled != 1 ||
		g.Program == nil || g.Program.Path != f.Path || !bytes.Equal(g.Program.SHA256, f.SHA256) {
		t.Fatalf("the grant: %+v", g)
	}
	if st := <-waited; st == nil || st.State != wire.RequestApproved || st.LeaseID != g.ID {
		t.Fatalf("the waiting requester learnt %+v; want approved on grant %s", st, g.ID)
	}
	for i, argv := range [][]string{{"status"}, {"log", "--oneline"}} {
		s, err := requester.Submit(r.workspace, r.gitRequest(argv...))
		if err != nil || s.Handle == "" || s.Lease != g.ID || s.Contract != "git" || s.UsesLeft != uint32(2-i) {
			t.Fatalf("git %q after the grant: %+v %v; want accepted under grant %s", argv, s, err, g.ID)
		}
	}
	if _, err := r.cl.EnableContract(&wire.ContractEnable{Name: "git", Request: v.ID, Uses: 1, TTLSeconds: 60}); err == nil {
		t.Fatal("a second grant settled the approved request again")
	}
}

// A contract is offered for a request when it fits its executable and
// accepts its argv; it covers the request and the earlier requests it
// accepts that a grant for this one would bind (the same executable,
// workspace and profile), newest first, each once. Another file of the
// same name is not the same executable, another profile is another
// binding, and a command no contract fits gets no offer.
func TestContractOffer(t *testing.T) {
	r := newRig(t)
	_, l := r.approved(r.gitRequest("status"), 1)
	r.wantApproval(r.gitRequest("diff", "--stat"))
	r.wantApproval(r.gitRequest("diff", "--stat")) // the same request: listed once
	must(t, r.cl.Deny(r.wantApproval(r.gitRequest("-c", "x=y", "status")).ID, "no"))
	other := filepath.Join(t.TempDir(), "git")
	copyFile(t, "/bin/true", other)
	r.wantApproval(wire.ActionRequest{Executable: other, Argv: []string{"log"}, Cwd: ".", Profile: wire.ProfileShort})
	long := r.gitRequest("log")
	long.Profile = wire.ProfileLong
	r.wantApproval(long)
	v := r.wantApproval(r.gitRequest("show", "HEAD"))

	offers, err := r.cl.ContractOffer(v.ID)
	must(t, err)
	want := []string{"git show HEAD", "git diff --stat", "git status"}
	if len(offers) != 1 || offers[0].Name != "git" || !strings.Contains(offers[0].Usage, "git commit [-a] -m <message>") ||
		strings.Join(offers[0].Covers, "\n") != strings.Join(want, "\n") || offers[0].Program.Path != v.Identity.Executable.File.Path {
		t.Fatalf("offers for %s: %+v; want git covering %q", v.ID, offers, want)
	}
	if offers, err := r.cl.ContractOffer(r.wantApproval(r.request("x")).ID); err != nil || len(offers) != 0 {
		t.Fatalf("offers for a command no contract fits: %+v %v", offers, err)
	}
	_, err = r.cl.ContractOffer("ar-none")
	wantCode(t, err, wire.CodeArgumentsInvalid)
	// `contracts revoke` is for a grant: the lease stays.
	wantCode(t, r.cl.RevokeContract(l.ID), wire.CodeArgumentsInvalid)
	if got := r.lease(l.ID); got.Revoked {
		t.Fatalf("the lease was revoked as a contract grant: %+v", got)
	}
}

// A contract binds the program it is about, never a name: a workspace
// symlink named git that leads to /bin/sh is offered nothing, and git's
// contract is refused for it (its grammar would let `dash status`, `dash
// add -A`… run workspace scripts). A Go root's go is the go contracts'
// program when the Go root lies outside the workspace (offered and
// enabled without naming it); inside, where a command can write it, it is
// bound only when the operator names it.
func TestContractBindsTheProgramNotItsName(t *testing.T) {
	r := newRig(t)
	git, err := exec.LookPath(r.gitRequest().Executable)
	must(t, err)
	git, err = filepath.EvalSymlinks(git)
	must(t, err)
	must(t, os.Symlink("/bin/sh", filepath.Join(r.workspace, "git")))
	link := r.wantApproval(wire.ActionRequest{Executable: "./git", Argv: []string{"status"}, Cwd: ".", Profile: wire.ProfileShort})
	if got := r.offered(link); len(got) != 0 {
		t.Fatalf("offered %q for ./git status, a link to %s", got, link.Identity.Executable.File.Path)
	}
	r.refusedEnable("git", link.ID, "", "contract git is for git, which resolves here to "+git+" (sha256 ",
		"request "+link.ID+" runs "+link.Identity.Executable.File.Path+" (sha256 ")

	inside := goTree(t, filepath.Join(r.workspace, "goroot"))
	in := r.wantApproval(wire.ActionRequest{Executable: inside, Argv: []string{"vet"}, Cwd: ".", Profile: wire.ProfileShort})
	if in.Identity.Toolchain == nil {
		t.Fatalf("the Go root in the workspace is not recognised: %+v", in.Identity.Executable)
	}
	if got := r.offered(in); len(got) != 0 {
		t.Fatalf("offered %q for the go of a Go root inside the workspace", got)
	}
	r.refusedEnable("go-vet", in.ID, "", "inside the workspace", "--executable "+inside)
	g, err := r.enable("go-vet", in.ID, "./goroot/bin/go")
	if err != nil || g.Program == nil || g.Program.Path != inside || g.Settled != 1 {
		t.Fatalf("go-vet for %s, its go named: %+v %v", in.ID, g, err)
	}

	outside := goTree(t, filepath.Join(t.TempDir(), "go"))
	out := r.wantApproval(wire.ActionRequest{Executable: outside, Argv: []string{"vet"}, Cwd: ".", Profile: wire.ProfileShort})
	if got := strings.Join(r.offered(out), " "); !strings.Contains(got, "go-vet") {
		t.Fatalf("offered %q for the go of a Go root, want go-vet", got)
	}
	if g, err := r.enable("go-vet", out.ID, ""); err != nil || g.Program == nil || g.Program.Path != outside {
		t.Fatalf("go-vet for %s: %+v %v", out.ID, g, err)
	}
}

// A grant enabled for one request settles every pending request of the
// workspace it admits (the same program, profile and environment, an
// argv the grammar accepts in its cwd), in the same step: each waiter
// wakes approved on the grant, and the answer says how many. A request
// the grammar refuses, or of another profile, stays pending.
func TestContractGrantSettlesTheRequestsItAdmits(t *testing.T) {
	r := newRig(t)
	first := r.wantApproval(r.gitRequest("status"))
	requester, second := r.requester(r.gitRequest("log", "--oneline"))
	defer requester.Close()
	refused := r.wantApproval(r.gitRequest("-c", "core.fsmonitor=x", "status"))
	long := r.gitRequest("diff")
	long.Profile = wire.ProfileLong
	other := r.wantApproval(long)
	waited := make(chan *wire.ApprovalState, 1)
	go func() {
		st, err := requester.ApprovalWait(second.ID, time.Minute)
		if err != nil {
			t.Error(err)
		}
		waited <- st
	}()
	g, err := r.enable("git", first.ID, "")
	must(t, err)
	if g.Settled != 2 {
		t.Fatalf("the grant settled %d requests, want 2", g.Settled)
	}
	if st := <-waited; st == nil || st.State != wire.RequestApproved || st.LeaseID != g.ID {
		t.Fatalf("the waiter on %s learnt %+v; want approved on grant %s", second.ID, st, g.ID)
	}
	if !r.pending(refused.ID) || !r.pending(other.ID) {
		t.Fatalf("a request the grant does not admit was settled: %s %v, %s %v", refused.ID, r.pending(refused.ID), other.ID, r.pending(other.ID))
	}
}

// The program of a contract's name in a request's toolchain root
// (<root>/bin/git) is the contract's program only where the request's
// commands cannot write that root: a root inside the workspace or the
// cache, its bin/git a link to the file the request runs, is refused
// (the request must name the file); the same link in a root outside is
// accepted.
func TestContractProgramNotFromAWritableToolchainRoot(t *testing.T) {
	r := newRig(t)
	c, err := contract.Builtin("git")
	must(t, err)
	v := r.wantApproval(r.request("status"))
	for _, tc := range []struct {
		root string
		ok   bool
	}{
		{filepath.Join(t.TempDir(), "tc"), true},
		{filepath.Join(r.workspace, "tc"), false},
		{filepath.Join(v.Identity.Policy.ReadWrite[0], "tc"), false},
	} {
		must(t, os.MkdirAll(filepath.Join(tc.root, "bin"), 0o755))
		must(t, os.Symlink(r.tool, filepath.Join(tc.root, "bin", "git")))
		id := v.Identity
		id.Toolchain = &wire.Toolchain{Kind: wire.ToolchainGo, Name: "go1.22.0", Root: tc.root}
		err := r.b.programsOf(&id).check(c, v.ID, "")
		switch {
		case tc.ok && err != nil:
			t.Errorf("root %s outside what commands write, its bin/git the file the request runs: %v", tc.root, err)
		case !tc.ok:
			wantCode(t, err, wire.CodeArgumentsInvalid)
		}
	}
}

// A grant settles no more requests than it has runs: enabled with 3 uses
// for one of four pending requests it admits, it settles that one and
// the two oldest others, each of which then runs under it when submitted
// again; the newest stays pending, not told approved to find the grant
// used up.
func TestContractGrantSettlesAtMostItsUses(t *testing.T) {
	r := newRig(t)
	argvs := [][]string{{"status"}, {"log"}, {"diff"}, {"log", "--oneline"}}
	var ids []string
	for _, argv := range argvs {
		ids = append(ids, r.wantApproval(r.gitRequest(argv...)).ID)
	}
	g, err := r.enable("git", ids[0], "")
	must(t, err)
	if g.Settled != 3 || !r.pending(ids[3]) {
		t.Fatalf("a grant of 3 uses settled %d requests, %s pending %v; want 3, the newest pending", g.Settled, ids[3], r.pending(ids[3]))
	}
	for _, argv := range argvs[:3] {
		r.wantAccepted(r.gitRequest(argv...))
	}
	if v := r.wantApproval(r.gitRequest(argvs[3]...)); v.ID != ids[3] {
		t.Fatalf("the request left pending, submitted again, raised %s; want %s", v.ID, ids[3])
	}
}

// A request that would never run under a grant on this broker (its
// identity was made under a policy this broker no longer gives it) is
// refused a contract, with the sentence a lease listing says it with.
func TestEnableRefusesARequestThatWillNotMatch(t *testing.T) {
	r := newRig(t)
	v := r.wantApproval(r.request())
	bin := filepath.Dir(r.tool)
	must(t, os.Rename(bin, bin+".old"))
	must(t, os.Mkdir(bin, 0o755))
	copyFile(t, bin+".old/tool", r.tool)
	why := r.b.willNotMatch(&v.Identity)
	if why == "" {
		t.Fatal("the request's identity still matches once its directory was replaced")
	}
	r.refusedEnable("git", v.ID, "", "approval request "+v.ID+" would never run under a grant here ("+why+")")
}

// Contracts are offered for a pending request only: one decided, or past
// its TTL, is refused with a sentence saying what became of it. A cwd
// that is another directory now is a plain sentence, its cause behind
// --debug (the error's detail).
func TestContractOfferNeedsAPendingRequest(t *testing.T) {
	r := newRig(t)
	approved, _ := r.approved(r.gitRequest("status"), 1)
	_, err := r.cl.ContractOffer(approved.ID)
	wantCode(t, err, wire.CodeArgumentsInvalid)
	if !strings.Contains(err.Error(), "approval request "+approved.ID+" is already approved") {
		t.Fatalf("offer for an approved request: %v", err)
	}
	sub := r.gitRequest("log")
	sub.Cwd = "sub"
	moved := r.wantApproval(sub)
	must(t, os.Rename(filepath.Join(r.workspace, "sub"), filepath.Join(r.workspace, "sub.old")))
	must(t, os.Mkdir(filepath.Join(r.workspace, "sub"), 0o755))
	_, err = r.cl.ContractOffer(moved.ID)
	wantCode(t, err, wire.CodePathInvalid)
	var we *wire.Error
	if errors.As(err, &we); we.Detail == "" || strings.Contains(we.Message, we.Detail) || strings.Contains(we.Message, "(") {
		t.Fatalf("offer with its cwd replaced: message %q, detail %q; want a plain sentence, the cause as detail", we.Message, we.Detail)
	}
	overdue := r.wantApproval(r.gitRequest("diff"))
	r.clock.Advance(journal.RequestTTL)
	_, err = r.cl.ContractOffer(overdue.ID)
	wantCode(t, err, wire.CodeArgumentsInvalid)
	if !strings.Contains(err.Error(), "approval request "+overdue.ID+" expired") {
		t.Fatalf("offer for an overdue request: %v", err)
	}
}

// A request whose command line is long (git diff of many files) is
// covered by the offers made for the later requests of its workspace,
// its line cut to wire.MaxCoverLine: before, its line failed the
// answer's validation and every later offer of the workspace failed with
// it.
func TestContractOfferCoversALongCommand(t *testing.T) {
	r := newRig(t)
	argv := []string{"diff", "--"}
	for i := range 40 {
		name := fmt.Sprintf("src/a-rather-long-file-name-%02d.go", i)
		must(t, os.MkdirAll(filepath.Join(r.workspace, "src"), 0o755))
		must(t, os.WriteFile(filepath.Join(r.workspace, name), nil, 0o644))
		argv = append(argv, name)
	}
	r.wantApproval(r.gitRequest(argv...))
	v := r.wantApproval(r.gitRequest("status"))
	offers, err := r.cl.ContractOffer(v.ID)
	must(t, err)
	if len(offers) != 1 || len(offers[0].Covers) != 2 {
		t.Fatalf("offers for %s: %+v; want git covering two commands", v.ID, offers)
	}
	if long := offers[0].Covers[1]; len(long) > wire.MaxCoverLine || len(long) < wire.MaxCoverLine-8 ||
		!strings.HasPrefix(long, "git diff -- src/") || !strings.HasSuffix(long, "…") {
		t.Fatalf("the long command is covered as %d bytes: %q", len(long), long)
	}
}
