//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"warrant/wire"
)

// listedLease is a lease as `broker leases --json` lists it, in the parts
// these tests read.
type listedLease struct {
	ID           string  `json:"id"`
	State        string  `json:"state"`
	UsesLeft     int     `json:"uses_left"`
	WillNotMatch *string `json:"will_not_match"`
}

// TestLeaseGrantedUnderAnotherPolicyWillNotMatch: a lease binds the policy
// and environment of the broker that granted it. A broker restarted on the
// same state with the same configuration lists it as usable, and a submit
// of its command runs under it; one restarted with a declared variable
// more lists it as granted under another environment, one with a read path
// more as granted under another policy, each naming what differs and that
// it will not match, in text and JSON — and there a submit of the same
// command asks for approval anew and consumes nothing of the lease.
func TestLeaseGrantedUnderAnotherPolicyWillNotMatch(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	req := func() wire.ActionRequest { return a.request(wire.ProfileShort, "/bin/echo", "same command") }
	h := a.Start(req(), 5)
	a.End(h)
	digest := d.Receipt(h).Identity.PolicyDigest // the lease's
	restart := func(serveArgs ...string) {
		t.Helper()
		d.kill()
		d = startBroker(t, d.State, serveArgs...)
		a.d, a.cl = d, d.dial()
	}
	listed := func() listedLease {
		t.Helper()
		out, code := d.CLI("leases", "--json")
		ls := wholeListing[listedLease](t, "leases", out)
		if code != 0 || len(ls) != 1 {
			t.Fatalf("broker leases --json: exit %d, want the one lease:\n%s", code, out)
		}
		return ls[0]
	}
	// what a broker whose policy and environment differ from the lease's
	// lists, and does with a submit of its command.
	wontMatch := func(want string) {
		t.Helper()
		l := listed()
		if l.State != "will_not_match" || l.WillNotMatch == nil || *l.WillNotMatch != want {
			if l.WillNotMatch != nil {
				t.Fatalf("the lease is listed as %s: %q, want will_not_match: %q", l.State, *l.WillNotMatch, want)
			}
			t.Fatalf("the lease is listed as %s, want will_not_match: %q", l.State, want)
		}
		text, _ := d.CLI("leases")
		if !strings.Contains(text, l.ID+"  will not match ") || !strings.Contains(text, want+": a submit of its command does not use it now; `broker revoke "+l.ID) {
			t.Fatalf("broker leases does not say %q of %s:\n%s", want, l.ID, text)
		}
		s, err := a.cl.Submit(a.WS, req())
		if err != nil || s.Approval == nil || s.Handle != "" {
			t.Fatalf("a submit of the lease's command ran or failed instead of asking anew: %+v %v", s, err)
		}
		if after := listed(); after.UsesLeft != l.UsesLeft {
			t.Fatalf("the submit took a use of the lease that cannot match: %d left, was %d", after.UsesLeft, l.UsesLeft)
		}
	}

	restart()
	if l := listed(); l.State != "usable" || l.WillNotMatch != nil || l.UsesLeft != 4 {
		t.Fatalf("under the same configuration the lease is listed as %+v, want usable with 4 uses", l)
	}
	if s, err := a.cl.Submit(a.WS, req()); err != nil || s.Handle == "" || s.UsesLeft != 3 {
		t.Fatalf("under the same configuration the lease's command did not run under it: %+v %v", s, err)
	} else {
		a.End(s.Handle)
	}

	restart("--env", "GOFLAGS=-mod=mod")
	wontMatch("granted under another environment (GOFLAGS set now), will not match")

	// A read path an operator may take from an agent's directory names:
	// its ESC byte is said quoted, never sent to the terminal.
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	extra := filepath.Join(dir, "tools\x1b[31m")
	if err := os.Mkdir(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	restart("--read-path", extra)
	wontMatch("granted under policy sha256 " + digest[:12] + "… (read path " + strconv.Quote(extra) + " added), will not match")
	if text, _ := d.CLI("leases"); strings.ContainsRune(text, 0x1b) {
		t.Fatalf("broker leases prints a raw ESC byte:\n%q", text)
	}
}
