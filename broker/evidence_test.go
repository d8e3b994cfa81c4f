package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"warrant/broker/internal/journal"
	"warrant/broker/runner"
	"warrant/receipt"
	"warrant/wire"
)

// recordKeeper holds every launch, as holdExecutor does, and keeps the
// record each action's observer carries from its checkpoint.
type recordKeeper struct {
	holdExecutor
	mu      sync.Mutex
	carried map[string]*journal.Record
}

func (k *recordKeeper) Start(ctx context.Context, l *runner.Launch, o runner.Observer) error {
	k.mu.Lock()
	k.carried[l.Handle] = o.(*observer).checkpointed
	k.mu.Unlock()
	return k.holdExecutor.Start(ctx, l, o)
}

// The record an observer carries from the checkpoint is what the journal
// reads back for the action then (only EXECUTING has happened; the
// identity equal under the canonical encoding), for every shape of
// identity: a plain command, a script and its interpreter, an egress
// grant, the operator's git identity, a contract grant's parse. The
// receipt built from either is the same, byte for byte, but for its id
// and issue time.
func TestCarriedRecordIsTheJournals(t *testing.T) {
	home := t.TempDir()
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Ada\n\temail = ada@example.org\n"), 0o600))
	k := &recordKeeper{carried: map[string]*journal.Record{}}
	r := newRig(t, func(c *Config) {
		c.Environ = append(c.Environ, "HOME="+home)
		c.Executor = k
	})
	script := filepath.Join(filepath.Dir(r.tool), "script")
	must(t, os.WriteFile(script, []byte("#!/bin/sh -e\nexit 0\n"), 0o755))
	scriptReq := r.request("a", "b")
	scriptReq.Executable = script
	var handles []string
	for _, req := range []wire.ActionRequest{r.request(), r.request("x", ""), scriptReq, r.egressRequest("127.0.0.1:4873")} {
		r.approved(req, 1)
		handles = append(handles, r.wantAccepted(req))
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("no git here: the contract grant's shape is not compared")
	} else {
		v := r.wantApproval(r.gitRequest("status"))
		_, err := r.enable("git", v.ID, "")
		must(t, err)
		handles = append(handles, r.wantAccepted(r.gitRequest("log", "--oneline")))
	}
	ctx := context.Background()
	for _, h := range handles {
		carried := k.carried[h]
		read, err := r.b.j.Record(ctx, h)
		must(t, err)
		if carried == nil || !sameRecord(t, carried, read) {
			t.Fatalf("action %s: carried %+v\nread back %+v", h, carried, read)
		}
		var encoded [2][]byte
		for i, rec := range []*journal.Record{carried, nil} {
			rc, err := r.b.journalledReceipt(ctx, h, rec, receipt.EventExecuting)
			must(t, err)
			rc.ID, rc.Issued, rc.Outcome = "r-0", receipt.Time{}, wire.KnownNotExecuted
			encoded[i], err = json.Marshal(rc)
			must(t, err)
		}
		if !bytes.Equal(encoded[0], encoded[1]) {
			t.Fatalf("action %s: the receipt from the carried record\n%s\nfrom the journal\n%s", h, encoded[0], encoded[1])
		}
	}
	// The shapes the test means to cover are there.
	c := func(i int) *journal.Record { return k.carried[handles[i]] }
	if c(0).Identity.GitIdentity == nil || c(2).Identity.Executable.Interpreter == nil || c(3).Identity.Egress == nil ||
		c(0).Approved == nil || len(handles) == 5 && c(4).Parse == nil {
		t.Fatal("a shape of identity the test means to cover is missing")
	}
}

// sameRecord reports whether a and b are the same record, their
// identities compared under the canonical encoding.
func sameRecord(t *testing.T, a, b *journal.Record) bool {
	ea, err := wire.Canonical(&a.Identity)
	must(t, err)
	eb, err := wire.Canonical(&b.Identity)
	must(t, err)
	x, y := *a, *b
	x.Identity, y.Identity = wire.CommandIdentity{}, wire.CommandIdentity{}
	return bytes.Equal(ea, eb) && reflect.DeepEqual(x, y)
}

// A carried identity may hold a nil list where the journal's reads back
// an empty one (wire.Canonical encodes both alike); the receipt's
// identity does not tell them apart either, so a receipt from the
// carried record is the journal's.
func TestReceiptIdentityOfNilListsIsTheJournals(t *testing.T) {
	in := &wire.CommandIdentity{Executable: wire.Executable{Requested: "x", Interpreter: &wire.Interpreter{}}, Profile: wire.ProfileShort}
	blob, err := wire.Canonical(in)
	must(t, err)
	var back wire.CommandIdentity
	must(t, wire.DecodeCanonical(blob, &back))
	if reflect.DeepEqual(in, &back) {
		t.Fatal("the identity read back is the one written: the test shows nothing")
	}
	a, err := json.Marshal(receipt.IdentityOf(in))
	must(t, err)
	b, err := json.Marshal(receipt.IdentityOf(&back))
	must(t, err)
	if !bytes.Equal(a, b) {
		t.Fatalf("the receipt's identity of the given one\n%s\nof the one read back\n%s", a, b)
	}
}
