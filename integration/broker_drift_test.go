//go:build linux

package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"warrant/wire"
)

// rewrite replaces the content of path in place (same inode), as an
// attacker with write access to the file would.
func rewrite(t *testing.T, path, from string) string {
	t.Helper()
	sum, err := tryRewrite(t, path, from)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// tryRewrite is rewrite returning the write's error instead of failing on
// it: a file that an exec has opened refuses writers with ETXTBSY.
func tryRewrite(t *testing.T, path, from string) (string, error) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), os.WriteFile(path, b, 0o755)
}

// requireNoLaunch requires that submitting req now runs nothing: a fresh
// approval request, or a refusal with one of the codes that name the
// change (any other refusal would hide why nothing ran), never a handle.
func requireNoLaunch(t *testing.T, a *agent, req wire.ActionRequest, codes ...wire.Code) {
	t.Helper()
	s, err := a.cl.Submit(a.WS, req)
	var we *wire.Error
	switch {
	case err == nil && s.Approval != nil:
		t.Logf("after the change: approval_required (request %s): the lease is bound to the old identity", s.Approval.ID)
	case errors.As(err, &we) && slices.Contains(codes, we.Code):
		t.Logf("after the change: refused %s: %s", we.Code, we.Message)
	default:
		t.Fatalf("after the change the command must not run under the old lease; got %+v, %v", s, err)
	}
}

// TestBrokerExecutableDrift: an executable rewritten in place after its
// approval gets no launch under that approval (and the lease keeps its
// use); one rewritten after the checkpoint cannot change what runs: the
// sealed, approved bytes run, and the receipt's executed digest is the
// approved digest.
func TestBrokerExecutableDrift(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	prog, marker := filepath.Join(a.WS, "prog"), filepath.Join(a.WS, "marker")
	trueSum := rewrite(t, prog, lookPath(t, "true"))
	req := a.request(wire.ProfileShort, prog, "write", marker, "ran")

	s, err := a.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		t.Fatalf("want approval_required, got %+v, %v", s, err)
	}
	if got := hex.EncodeToString(s.Approval.Identity.Executable.File.SHA256); got != trueSum {
		t.Fatalf("approval card digest %s, file %s", got, trueSum)
	}
	lease, err := a.cl.Approve(s.Approval.ID, 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Between approval and launch the file becomes a program that would
	// write the marker.
	helperSum := rewrite(t, prog, bins.helper)
	requireNoLaunch(t, a, req, wire.CodeIdentityDrift)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the rewritten executable ran: marker %v", err)
	}
	l, err := a.cl.List(wire.ListLeases, false)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(l.Leases, func(v wire.LeaseView) bool { return v.ID == lease.ID }); i < 0 || l.Leases[i].UsesLeft != 1 {
		t.Fatalf("lease %s must keep its use: %+v", lease.ID, l.Leases)
	}

	// Approve the helper as it is now, then rewrite the file right after
	// the checkpoint. The helper is a Go program, so it runs in place,
	// bound by the broker's read lease. Either the launcher sees the file
	// changed and starts nothing (known_not_executed/IDENTITY_DRIFT: no
	// marker), or the writer's open, breaking the lease, makes the exec
	// fail with ETXTBSY (spawn_failed/IDENTITY_DRIFT: no marker), or the
	// exec came first and the kernel kept the writer out while the
	// approved helper bytes ran.
	h := a.Start(req, 1)
	_, writeErr := tryRewrite(t, prog, lookPath(t, "true"))
	if writeErr != nil && !errors.Is(writeErr, syscall.ETXTBSY) {
		t.Fatal(writeErr)
	}
	r := a.End(h)
	rc := d.Receipt(r.ReceiptID)
	_, statErr := os.Stat(marker)
	switch r.Outcome {
	case wire.KnownNotExecuted, wire.SpawnFailed:
		if writeErr != nil {
			t.Fatalf("the writer was kept out (%v), so the exec had already opened the approved bytes, yet the outcome is %s", writeErr, r.Outcome)
		}
		if r.Error == nil || r.Error.Code != wire.CodeIdentityDrift || !errors.Is(statErr, os.ErrNotExist) {
			t.Fatalf("not executed must be IDENTITY_DRIFT with no marker: %+v, marker %v", r.Error, statErr)
		}
		// A failed exec follows Ready: its receipt has the sandbox and
		// the errno, never a process or a start.
		if rc.Pid != nil || rc.Start != nil || (r.Outcome == wire.KnownNotExecuted) != (rc.Sandbox == nil) {
			t.Fatalf("the receipt of an action never started claims a process: %+v", rc)
		}
		t.Logf("rewritten after the checkpoint: %s IDENTITY_DRIFT (%s), no marker", r.Outcome, r.Error.Message)
	case wire.Exited:
		if b, err := os.ReadFile(marker); err != nil || string(b) != "ran" {
			t.Fatalf("the approved (helper) bytes must have run and written the marker: %q, %v", b, err)
		}
		if rc.Identity.Executable.SHA256 != helperSum || rc.Sandbox == nil || rc.Sandbox.ExecutedSHA256 != helperSum {
			t.Fatalf("approved %s; receipt identity %s, executed %+v", helperSum, rc.Identity.Executable.SHA256, rc.Sandbox)
		}
		t.Logf("rewritten after the exec (writer: %v): the approved bytes ran (executed sha256 %s, bound by %s)", writeErr, helperSum, rc.Sandbox.BoundBy)
	default:
		t.Fatalf("%s %+v", r.Outcome, r.Error)
	}
}

// TestBrokerCwdSymlinkSwap: the working directory, approved as a real
// directory, replaced by a symlink to another directory before launch:
// nothing runs, in either directory.
func TestBrokerCwdSymlinkSwap(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	sub, elsewhere := filepath.Join(a.WS, "sub"), filepath.Join(a.WS, "elsewhere")
	for _, dir := range []string{sub, elsewhere} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	req := a.request(wire.ProfileShort, bins.helper, "write", "marker", "ran")
	req.Cwd = "sub"
	s, err := a.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		t.Fatalf("want approval_required, got %+v, %v", s, err)
	}
	if _, err := a.cl.Approve(s.Approval.ID, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(sub, sub+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", sub); err != nil {
		t.Fatal(err)
	}
	requireNoLaunch(t, a, req, wire.CodePathInvalid, wire.CodeIdentityDrift)
	for _, dir := range []string{sub + ".old", elsewhere} {
		if _, err := os.Stat(filepath.Join(dir, "marker")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("something ran in %s: %v", dir, err)
		}
	}
	if l, err := a.cl.List(wire.ListActions, false); err != nil || slices.ContainsFunc(l.Actions, func(v wire.ActionView) bool { return v.Session == req.Session }) {
		t.Fatalf("an action was recorded for the swapped cwd: %+v, %v", l, err)
	}
}
