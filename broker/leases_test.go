package broker

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/broker/internal/caches"
	"warrant/broker/internal/identity"
	"warrant/wire"
)

// A lease's identity is compared with what this broker would give its
// command now: the same identity may match; one whose environment, git
// identity or policy differs is said, with what differs, to never match;
// what is the command's own (its workspace cache's variables) is left
// out. The listing carries the sentence of a lease that will not match.
func TestLeaseWillNotMatchSaysWhatDiffers(t *testing.T) {
	r := newRig(t)
	a, l := r.approved(r.request(), 2)
	if got := r.lease(l.ID).WillNotMatch; got != "" {
		t.Fatalf("a lease of this very broker is listed as %q", got)
	}
	under := func(change func(*wire.CommandIdentity)) string {
		id := a.Identity
		id.Env = slices.Clone(id.Env)
		id.Policy.ReadExec = slices.Clone(id.Policy.ReadExec)
		id.Policy.Pins = slices.Clone(id.Policy.Pins)
		change(&id)
		d, err := identity.Digest(&id.Policy)
		must(t, err)
		id.PolicyDigest = d
		return r.b.willNotMatch(&id)
	}
	policy := func(id *wire.CommandIdentity) string {
		d, err := identity.Digest(&id.Policy)
		must(t, err)
		return "granted under policy sha256 " + hex.EncodeToString(d)[:12] + "… ("
	}
	usr := a.Identity.Policy.ReadExec[0]
	abi := a.Identity.Policy.MinLandlockABI
	for _, c := range []struct {
		name   string
		change func(*wire.CommandIdentity)
		want   func(*wire.CommandIdentity) string
	}{
		{"the same", func(*wire.CommandIdentity) {}, nil},
		{"a cache variable", func(id *wire.CommandIdentity) {
			id.Env = append(id.Env, wire.EnvVar{Name: caches.Names()[0], Value: "/elsewhere"})
		}, nil},
		{"a variable no longer set", func(id *wire.CommandIdentity) {
			id.Env = append(id.Env, wire.EnvVar{Name: "GOFLAGS", Value: "-mod=mod"})
		}, func(*wire.CommandIdentity) string {
			return "granted under another environment (GOFLAGS no longer set), will not match"
		}},
		{"a variable of another value, and git", func(id *wire.CommandIdentity) {
			i := slices.IndexFunc(id.Env, func(kv wire.EnvVar) bool { return kv.Name == "LANG" })
			id.Env[i].Value = "de_DE.UTF-8"
			id.GitIdentity = &wire.GitIdentity{Name: "Someone Else", Email: "else@example.org"}
		}, func(*wire.CommandIdentity) string {
			return "granted under another environment (LANG has another value; another git identity), will not match"
		}},
		{"a read path gone and the Landlock floor", func(id *wire.CommandIdentity) {
			id.Policy.ReadExec = append(id.Policy.ReadExec, "/opt/gone")
			id.Policy.MinLandlockABI--
		}, func(id *wire.CommandIdentity) string {
			return policy(id) + fmt.Sprintf("read path /opt/gone gone; Landlock ABI floor %d, was %d), will not match", abi, abi-1)
		}},
		{"a pin and the environment", func(id *wire.CommandIdentity) {
			i := slices.IndexFunc(id.Policy.Pins, func(p wire.PathPin) bool { return p.Path == usr })
			id.Policy.Pins[i].Ino++
			id.Env = append(id.Env, wire.EnvVar{Name: "GOFLAGS", Value: "-mod=mod"})
		}, func(id *wire.CommandIdentity) string {
			return policy(id) + usr + " is another file or directory now) and another environment (GOFLAGS no longer set), will not match"
		}},
	} {
		var id wire.CommandIdentity
		got := under(func(c2 *wire.CommandIdentity) { c.change(c2); id = *c2 })
		want := ""
		if c.want != nil {
			want = c.want(&id)
		}
		if got != want {
			t.Errorf("%s: %q, want %q", c.name, got, want)
		}
	}
}

// A path in what differs is written so that it prints as itself: a read
// path or a pin holding an ESC byte (an agent may choose directory names)
// is quoted, and no raw control byte reaches the operator's terminal.
func TestLeaseWillNotMatchQuotesPaths(t *testing.T) {
	r := newRig(t)
	a, _ := r.approved(r.request(), 1)
	id := a.Identity
	esc := "/opt/\x1b[2Jgone"
	id.Policy.ReadExec = append(slices.Clone(id.Policy.ReadExec), esc)
	id.Policy.Pins = append(slices.Clone(id.Policy.Pins), wire.PathPin{Path: esc, Dev: 1, Ino: 2})
	d, err := identity.Digest(&id.Policy)
	must(t, err)
	id.PolicyDigest = d
	got := r.b.willNotMatch(&id)
	if strings.ContainsRune(got, 0x1b) || !strings.Contains(got, `read path "/opt/\x1b[2Jgone" gone`) {
		t.Fatalf("a path with an ESC byte is said as %q", got)
	}
}

// A lease whose policy cannot be made now (its executable's directory is
// gone) is said to be unverifiable, with the reason, not to have been
// granted under another policy.
func TestLeaseWhosePolicyCannotBeMadeSaysSo(t *testing.T) {
	r := newRig(t)
	_, l := r.approved(r.request(), 2)
	must(t, os.RemoveAll(filepath.Dir(r.tool)))
	got := r.lease(l.ID).WillNotMatch
	if !strings.HasPrefix(got, "cannot be checked now: ") || !strings.Contains(got, filepath.Dir(r.tool)) ||
		strings.Contains(got, "policy sha256") || strings.Contains(got, "granted under") {
		t.Fatalf("a lease whose executable's directory is gone is listed as %q", got)
	}
}

// A listing makes the policy of each command once: leases of one command
// share it, and a command under another toolchain root has its own.
func TestLeaseListingMakesEachPolicyOnce(t *testing.T) {
	r := newRig(t)
	a, _ := r.approved(r.request(), 1)
	made := policies{}
	for range 3 {
		if got := r.b.judge(&a.Identity, made); got != "" {
			t.Fatalf("a lease of this very broker is listed as %q", got)
		}
	}
	other := a.Identity
	other.Toolchain = &wire.Toolchain{Root: filepath.Dir(r.tool)}
	r.b.judge(&other, made)
	if len(made) != 2 {
		t.Fatalf("the listing made %d policies for 4 leases of 2 commands, want 2", len(made))
	}
}

// The journal hands the broker the identity of each lease it lists, in
// its order, and the broker judges only the leases the page keeps.
func TestLeaseListingJudgesThePageKept(t *testing.T) {
	r := newRig(t)
	r.approved(r.request("one"), 1)
	_, second := r.approved(r.request("two"), 1)
	must(t, os.RemoveAll(filepath.Dir(r.tool)))
	var ids []*wire.CommandIdentity
	ls, err := r.b.j.Leases(context.Background(), "", 10, &ids)
	must(t, err)
	if len(ls) != 2 || len(ids) != 2 || ls[0].ID != second.ID || ids[0].Argv[0] != "two" || ids[1].Argv[0] != "one" {
		t.Fatalf("the journal listed %d leases with %d identities, not in one order", len(ls), len(ids))
	}
	if ls[0].WillNotMatch != "" || ls[1].WillNotMatch != "" {
		t.Fatal("the journal judged a lease itself")
	}
	reply, err := r.b.list(context.Background(), &wire.List{Kind: wire.ListLeases, Limit: 1})
	must(t, err)
	page := reply.(*wire.Listing).Leases
	if len(page) != 1 || page[0].ID != second.ID || page[0].WillNotMatch == "" {
		t.Fatalf("the page of one lease: %+v", page)
	}
}
