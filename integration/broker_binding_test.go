//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// TestBrokerInPlaceBinding: a Go program runs in place by default, so
// os.Executable() is its installed path, and its receipt says the binding
// and what bound it. Pinned to the sealed snapshot by the operator, the
// same program runs from the memfd copy instead, under a lease of its own.
func TestBrokerInPlaceBinding(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	tool := filepath.Join(t.TempDir(), "bin", "helper")
	if err := os.Mkdir(filepath.Dir(tool), 0o755); err != nil {
		t.Fatal(err)
	}
	copyExecutable(t, bins.helper, tool)
	h, r := a.Run(a.request(wire.ProfileShort, tool, "exe"))
	if r.Outcome != wire.Exited || !strings.Contains(r.Stdout.Text, "\n"+tool+"\n") {
		t.Fatalf("in place, os.Executable() must be the installed path %s: %s %q %+v", tool, r.Outcome, r.Stdout.Text, r.Error)
	}
	rc := d.Receipt(h)
	if rc.Sandbox == nil || rc.Sandbox.Binding != wire.InPlace || rc.Sandbox.BoundBy != "read-lease" ||
		rc.Sandbox.ExecutedSHA256 != rc.Identity.Executable.SHA256 {
		t.Fatalf("receipt sandbox %+v, want in-place bound by the broker's read lease, the approved digest executed", rc.Sandbox)
	}

	req := a.request(wire.ProfileShort, tool, "exe", "sealed")
	s, err := a.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v %v", s, err)
	}
	if s.Approval.Identity.Binding != wire.InPlace {
		t.Fatalf("the request shows binding %s, want the default in-place", s.Approval.Identity.Binding)
	}
	if _, err := a.cl.ApproveBinding(s.Approval.ID, 1, time.Hour, wire.SealedSnapshot); err != nil {
		t.Fatal(err)
	}
	s, err = a.cl.Submit(a.WS, req)
	if err != nil || s.Handle == "" {
		t.Fatalf("submit under the pinned lease: %+v %v", s, err)
	}
	r = a.End(s.Handle)
	if r.Outcome != wire.Exited || !strings.Contains(r.Stdout.Text, "/memfd:") {
		t.Fatalf("pinned to the sealed snapshot, the program runs from its memfd copy: %q", r.Stdout.Text)
	}
	if rc := d.Receipt(s.Handle); rc.Sandbox == nil || rc.Sandbox.Binding != wire.SealedSnapshot || rc.Sandbox.ExecutedSHA256 == "" {
		t.Fatalf("receipt sandbox %+v, want the sealed snapshot with its digest", rc.Sandbox)
	}
}

// TestBrokerInPlaceWitnessBroken: a script runs in place, under its real
// path, so its interpreter reads it from the installed file. A script that
// changes itself while it runs breaks the witness: the receipt says the
// binding is broken (what was executed is not known) instead of vouching
// for the approved bytes.
func TestBrokerInPlaceWitnessBroken(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	script := filepath.Join(a.WS, "selfmod.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"# changed\" >> \"$0\"\necho ran \"$0\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, r := a.Run(a.request(wire.ProfileShort, script))
	if r.Outcome != wire.Exited || !strings.Contains(r.Stdout.Text, "ran "+script) {
		t.Fatalf("the script runs under its real path: %s %q %+v", r.Outcome, r.Stdout.Text, r.Error)
	}
	if rc := d.Receipt(h); rc.Sandbox == nil || rc.Sandbox.Binding != wire.Broken || rc.Sandbox.BoundBy != "script-read-by-path" {
		t.Fatalf("receipt sandbox %+v, want binding broken, the script read by path", rc.Sandbox)
	}
}

// TestBrokerInPlaceWriterRefused: while another process holds an in-place
// program open for writing (it could change the bytes between the hash
// and the exec), the broker cannot take its read lease, and the approved
// command is refused IDENTITY_DRIFT before anything starts: the program
// never runs and the lease keeps its use. Once the writer closes, the same
// command runs under that use, bound by the lease.
func TestBrokerInPlaceWriterRefused(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	tool := filepath.Join(a.WS, "tool")
	copyExecutable(t, bins.helper, tool)
	marker := filepath.Join(a.WS, "marker")
	req := a.request(wire.ProfileShort, tool, "write", marker, "ran")
	s, err := a.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		t.Fatalf("submit: %+v %v", s, err)
	}
	if _, err := a.cl.Approve(s.Approval.ID, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(tool, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	requireNoLaunch(t, a, req, wire.CodeIdentityDrift)
	w.Close()
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the program ran while a writer held it: %v", err)
	}
	s, err = a.cl.Submit(a.WS, req)
	if err != nil || s.Handle == "" {
		t.Fatalf("with the writer gone, the same use runs the command: %+v %v", s, err)
	}
	if r := a.End(s.Handle); r.Outcome != wire.Exited {
		t.Fatalf("outcome %s %+v", r.Outcome, r.Error)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "ran" {
		t.Fatalf("marker %q %v", b, err)
	}
	if rc := d.Receipt(s.Handle); rc.Sandbox == nil || rc.Sandbox.BoundBy != "read-lease" {
		t.Fatalf("receipt sandbox %+v, want bound by the read lease", rc.Sandbox)
	}
}
