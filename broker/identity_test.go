package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"warrant/wire"
)

func TestIdentitySymlinkChainAndDigest(t *testing.T) {
	r := newRig(t)
	dir := filepath.Dir(r.tool)
	must(t, os.Symlink("tool", filepath.Join(dir, "hop1")))
	must(t, os.Symlink(filepath.Join(dir, "hop1"), filepath.Join(dir, "hop2")))
	req := r.request()
	req.Executable = filepath.Join(dir, "hop2")
	res, err := r.resolveReq(req)
	must(t, err)
	e := res.Identity.Executable
	want := []string{filepath.Join(dir, "hop2"), filepath.Join(dir, "hop1")}
	if !slices.Equal(e.Chain, want) || e.File.Path != r.tool {
		t.Fatalf("chain %q to %s, want %q to %s", e.Chain, e.File.Path, want, r.tool)
	}
	content, err := os.ReadFile(r.tool)
	must(t, err)
	if sum := sha256.Sum256(content); !bytes.Equal(sum[:], e.File.SHA256) {
		t.Fatal("recorded digest is not the file's SHA-256")
	}
	if !slices.Contains(res.Identity.Policy.ReadExec, dir) {
		t.Fatalf("the executable's directory %s is not readable in %q", dir, res.Identity.Policy.ReadExec)
	}
	pd, _ := digest(&res.Identity.Policy)
	if !bytes.Equal(pd, res.Identity.PolicyDigest) {
		t.Fatal("policy digest is not the SHA-256 of the canonical policy")
	}
	for _, kv := range res.Identity.Env {
		if kv.Name == "HOME" || kv.Name == "TMPDIR" || kv.Name == "SECRET_TOKEN" {
			t.Fatalf("identity environment holds %s", kv.Name)
		}
	}
}

func TestIdentityScriptPinsInterpreter(t *testing.T) {
	r := newRig(t)
	dir := filepath.Dir(r.tool)
	script := filepath.Join(dir, "script")
	must(t, os.WriteFile(script, []byte("#!"+r.tool+" -x\nbody\n"), 0o755))
	req := r.request()
	req.Executable = script
	res, err := r.resolveReq(req)
	must(t, err)
	in := res.Identity.Executable.Interpreter
	if in == nil || in.File.Path != r.tool || in.Arg != "-x" || res.Interp == nil {
		t.Fatalf("interpreter %+v", in)
	}
	// #!/usr/bin/env NAME pins NAME from the sanitized PATH.
	must(t, os.WriteFile(script, []byte("#!/usr/bin/env true\n"), 0o755))
	res, err = r.resolveReq(req)
	must(t, err)
	in = res.Identity.Executable.Interpreter
	if in == nil || !strings.HasSuffix(in.File.Path, "/true") || in.Arg != "" {
		t.Fatalf("env interpreter %+v", in)
	}
	for _, bad := range []string{"#!/usr/bin/env -S sh -x\n", "#!relative\n", "#!" + script + "\n"} {
		must(t, os.WriteFile(script, []byte(bad), 0o755))
		_, err = r.resolveReq(req)
		wantCode(t, err, wire.CodeArgumentsInvalid)
	}
}

func TestIdentityRefusals(t *testing.T) {
	r := newRig(t)
	dir := filepath.Dir(r.tool)
	must(t, os.Symlink(filepath.Join(r.workspace, "sub"), filepath.Join(r.workspace, "link")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o755))
	big := filepath.Join(dir, "big")
	f, err := os.OpenFile(big, os.O_CREATE|os.O_WRONLY, 0o755)
	must(t, err)
	must(t, f.Truncate(512<<20+1))
	f.Close()
	must(t, os.WriteFile(filepath.Join(dir, "noexec"), []byte("x"), 0o644))
	cases := []struct {
		exe, cwd string
		code     wire.Code
	}{
		{r.tool, "link", wire.CodePathInvalid},
		{r.tool, "missing", wire.CodePathInvalid},
		{"no-such-program-here", ".", wire.CodeExecutableNotFound},
		{filepath.Join(dir, "noexec"), ".", wire.CodeExecutableNotFound},
		{filepath.Join(dir, "fifo"), ".", wire.CodeExecutableNotFound},
		{big, ".", wire.CodeArgumentsInvalid},
	}
	for _, c := range cases {
		req := r.request()
		req.Executable, req.Cwd = c.exe, c.cwd
		_, err := r.resolveReq(req)
		wantCode(t, err, c.code)
	}
	// A workspace reached through a symlink is refused.
	must(t, os.Symlink(r.workspace, r.workspace+"-link"))
	_, err = r.b.resolve(&wire.Submit{Workspace: r.workspace + "-link", Request: r.request()})
	wantCode(t, err, wire.CodePathInvalid)
}

func TestAdmitRefusals(t *testing.T) {
	ok := wire.Submit{Workspace: "/ws", Request: wire.ActionRequest{Executable: "true", Cwd: ".", Profile: wire.ProfileShort}}
	if err := Admit(&ok); err != nil {
		t.Fatal(err)
	}
	many := make([]string, wire.MaxArgs+1)
	cases := []struct {
		mut  func(*wire.Submit)
		code wire.Code
	}{
		{func(s *wire.Submit) { s.Request.Cwd = "/etc" }, wire.CodePathInvalid},
		{func(s *wire.Submit) { s.Request.Cwd = "../x" }, wire.CodePathInvalid},
		{func(s *wire.Submit) { s.Request.Cwd = "a/../../x" }, wire.CodePathInvalid},
		{func(s *wire.Submit) { s.Workspace = "rel" }, wire.CodePathInvalid},
		{func(s *wire.Submit) { s.Request.Profile = 9 }, wire.CodeArgumentsInvalid},
		{func(s *wire.Submit) { s.Request.Argv = many }, wire.CodeArgumentsInvalid},
		{func(s *wire.Submit) { s.Request.Argv = []string{strings.Repeat("x", wire.MaxArgBytes+1)} }, wire.CodeArgumentsInvalid},
		{func(s *wire.Submit) { s.Request.Argv = []string{"a\x00b"} }, wire.CodeArgumentsInvalid},
		{func(s *wire.Submit) { s.Request.Executable = "bin/x" }, wire.CodeArgumentsInvalid},
	}
	for _, c := range cases {
		s := ok
		c.mut(&s)
		wantCode(t, Admit(&s), c.code)
	}
}

func TestJournalRecoveryMarksInFlightUnknown(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, l := r.approved(r.request(), 3)
	h1 := r.wantAccepted(r.request())
	h2 := r.wantAccepted(r.request())
	h3 := r.wantAccepted(r.request())
	must(t, r.b.MarkRunning(ctx, h2))
	code := int32(0)
	must(t, r.b.Finish(ctx, h3, &wire.Result{Outcome: wire.Exited, ExitCode: &code, GroupGone: true}))
	got, err := r.b.j.RecoverInterrupted(ctx)
	must(t, err)
	if !slices.Equal(got, []string{h1, h2}) && !slices.Equal(got, []string{h2, h1}) {
		t.Fatalf("recovered %q, want %s and %s", got, h1, h2)
	}
	for h, want := range map[string]wire.ActionState{h1: wire.StateUnknown, h2: wire.StateUnknown, h3: wire.StateTerminal} {
		st, err := r.cl.Query(h)
		must(t, err)
		if st.State != want {
			t.Fatalf("%s is %s, want %s", h, st.State, want)
		}
	}
	if v := r.lease(l.ID); v.UsesLeft != 0 {
		t.Fatalf("recovery refunded uses: %+v", v)
	}
	// The journal itself refuses to refund a use or revive an unknown action.
	_, err = r.b.j.db.ExecContext(ctx, `UPDATE leases SET uses_left = uses_left + 1`)
	if err == nil {
		t.Fatal("a lease use was refunded")
	}
	_, err = r.b.j.db.ExecContext(ctx, `UPDATE actions SET state = 'executing' WHERE handle = ?`, h1)
	if err == nil {
		t.Fatal("an unknown action went back to executing")
	}
	must(t, r.cl.Resolve(h1, wire.ClassFailed, "checked by hand"))
	wantCode(t, r.cl.Resolve(h1, wire.ClassSuccess, ""), wire.CodeArgumentsInvalid)
	wantCode(t, r.cl.Resolve(h3, wire.ClassSuccess, ""), wire.CodeArgumentsInvalid)
	unk, err := r.cl.List(wire.ListActions, true)
	must(t, err)
	if len(unk.Actions) != 1 || unk.Actions[0].Handle != h2 {
		t.Fatalf("unclassified unknown actions %+v, want only %s", unk.Actions, h2)
	}
	if v, err := r.b.j.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Fatalf("integrity %q %v", v, err)
	}
}

func TestStateDirOneBrokerAndDurability(t *testing.T) {
	r := newRig(t)
	_, err := Open(context.Background(), Config{StateDir: r.state})
	if err == nil || !strings.Contains(err.Error(), "another broker") {
		t.Fatalf("a second broker opened the same state directory: %v", err)
	}
	var mode string
	var sync int
	must(t, r.b.j.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	must(t, r.b.j.db.QueryRow(`PRAGMA synchronous`).Scan(&sync))
	if mode != "wal" || sync != 2 {
		t.Fatalf("journal_mode %s synchronous %d", mode, sync)
	}
	for _, d := range []string{"", "keys", "run", "actions"} {
		fi, err := os.Stat(filepath.Join(r.state, d))
		must(t, err)
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s/%s has mode %v", r.state, d, fi.Mode().Perm())
		}
	}
}
