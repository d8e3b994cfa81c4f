package fuzz

import (
	"bytes"
	"crypto/ed25519"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"warrant/receipt"
	"warrant/wire"
)

// plantable secrets, one per rule type, each planted after a space.
var planted = []string{
	"AKIAIOSFODNN7EXAMPLE",
	"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"ghp_abcdefghijklmnopqrstuvwxyz0123456789",
	"github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
	"glpat-xxxxYYYYzzzz01234567",
	"xoxb-123456789012-abcdefABCDEF",
	"sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
	"Bearer abcdef0123456789.ZZZ-yyy",
	"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBb0\n-----END EC PRIVATE KEY-----",
	"hunter2-correct-horse",
}

// FuzzReceiptRedact: random text with planted secrets, cut into random
// chunks of 1 byte to 64 KiB. Streaming redaction must equal whole-buffer
// redaction, and no planted secret may survive either.
func FuzzReceiptRedact(f *testing.F) {
	rs, err := receipt.NewRuleset([]byte("hunter2-correct-horse"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text []byte, plants []byte, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		var in []byte
		var used []string
		for i, p := range plants {
			cut := 0
			if len(text) > 0 {
				cut = rng.IntN(len(text) + 1)
			}
			in = append(in, text[:cut]...)
			text = text[cut:]
			s := planted[int(p)%len(planted)]
			in = append(append(append(in, ' '), s...), ' ')
			used = append(used, s)
			if i > 16 {
				break
			}
		}
		in = append(in, text...)
		whole, _, err := rs.Redact(in)
		if err != nil {
			t.Fatal(err)
		}
		var streamed []byte
		r := rs.NewRedactor(func(b []byte) { streamed = append(streamed, b...) })
		for rest := in; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN([]int{1, 16, 4096, 65536}[rng.IntN(4)]))
			if _, err := r.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if _, err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(streamed, whole) {
			t.Fatalf("streaming output differs from whole-buffer output\nwhole:    %q\nstreamed: %q", whole, streamed)
		}
		for _, s := range used {
			if bytes.Contains(whole, []byte(s)) {
				t.Fatalf("planted secret %q survived", s)
			}
		}
	})
}

// FuzzReceiptSign: any receipt that validates seals into a log that
// verifies, and its predicate decodes back to the same bytes.
func FuzzReceiptSign(f *testing.F) {
	keys, err := receipt.LoadOrCreateKeys(filepath.Join(f.TempDir(), "keys"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, goal, arg string, outcome uint8, code int32, sig uint8, mono int64) {
		r := &receipt.Receipt{Format: receipt.Format, ID: id, Action: "a-" + id, Goal: goal,
			Identity:    receipt.IdentityOf(identity(arg)),
			Fingerprint: strings.Repeat("ab", 32), Limits: receipt.LimitsOf(wire.ProfileStandard, receipt.Launched(receipt.EnforcedByCgroupV1, receipt.EnforcedByNone)),
			Issued: receipt.Time{MonoNs: mono}, Outcome: wire.Outcome(outcome%9 + 1),
			Events: []receipt.Event{{Type: receipt.EventRequested}}}
		switch r.Outcome {
		case wire.KnownNotExecuted:
			r.Error = &receipt.Refusal{Code: wire.CodeIdentityDrift, Message: "drift: " + arg}
		case wire.SpawnFailed:
			r.ExecErrno = new(uint32)
		case wire.OutcomeUnknown:
			r.Events = append(r.Events, receipt.Event{Type: receipt.EventUnknownTermination, At: receipt.Time{MonoNs: max(mono, 0)}})
		default:
			r.Pid, r.Start, r.End = new(int64), &receipt.Time{}, &receipt.Time{MonoNs: max(mono, 0)}
			r.Sandbox = &receipt.Sandbox{SeccompDigest: r.Fingerprint, Binding: wire.Unbound, ExecutedSHA256: r.Fingerprint}
			r.GroupGone = &receipt.GroupGone{Method: receipt.GonePgidESRCH}
			r.Events = append(r.Events, receipt.Event{Type: receipt.EventStarted},
				receipt.Event{Type: receipt.EventKillSent}, receipt.Event{Type: receipt.EventTerminated})
			if r.Outcome == wire.Exited {
				r.ExitCode = &code
			} else {
				r.Signal = &sig
			}
		}
		if _, err := r.Encode(); err != nil {
			return // not a receipt the broker could write
		}
		c, err := receipt.NewChain(keys, nil)
		if err != nil {
			t.Fatal(err)
		}
		e, err := c.Seal(r)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := c.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if rep := receipt.Verify([]receipt.Entry{e}, [][]byte{cp}, keys.Public()); !rep.OK() {
			t.Fatalf("verify(sign(x)) failed: %+v", rep.Problems)
		}
		pred, _ := r.Encode()
		back, err := receipt.DecodeReceipt(pred)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := back.Encode()
		if !bytes.Equal(again, pred) {
			t.Fatal("predicate does not round-trip")
		}
		other := ed25519.PublicKey(bytes.Repeat([]byte{1}, ed25519.PublicKeySize))
		if receipt.Verify([]receipt.Entry{e}, [][]byte{cp}, other).OK() {
			t.Fatal("verified under the wrong key")
		}
	})
}

func identity(arg string) *wire.CommandIdentity {
	d := bytes.Repeat([]byte{0xab}, 32)
	return &wire.CommandIdentity{
		Executable: wire.Executable{Requested: "tool", File: wire.FileIdentity{Path: "/usr/bin/tool", SHA256: d}},
		Argv:       []string{arg}, Cwd: wire.DirIdentity{Path: "."}, Workspace: wire.DirIdentity{Path: "/ws"},
		Profile: wire.ProfileStandard, PolicyDigest: d,
	}
}

// FuzzReceiptVerify feeds arbitrary envelopes and checkpoints to
// receipt.Verify (DSSE envelope, in-toto statement, predicate and
// signed-note decoders). Properties: no panic, and bytes the log's key did
// not sign never verify.
func FuzzReceiptVerify(f *testing.F) {
	keys, err := receipt.LoadOrCreateKeys(filepath.Join(f.TempDir(), "keys"))
	if err != nil {
		f.Fatal(err)
	}
	c, err := receipt.NewChain(keys, nil)
	if err != nil {
		f.Fatal(err)
	}
	e, err := c.Seal(seedReceipt())
	if err != nil {
		f.Fatal(err)
	}
	cp, err := c.Checkpoint()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(e.Envelope, cp)
	f.Fuzz(func(t *testing.T, env, cp []byte) {
		entries := []receipt.Entry{{Index: 0, Envelope: env, Body: e.Body}}
		if rep := receipt.Verify(entries, [][]byte{cp}, keys.Public()); rep.OK() && !bytes.Equal(env, e.Envelope) {
			t.Fatal("an envelope the log's key never signed verified")
		}
	})
}

// FuzzReceiptDecode: a predicate that decodes re-encodes to exactly its
// bytes; one that does not decode yields no value.
func FuzzReceiptDecode(f *testing.F) {
	pred, err := seedReceipt().Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pred)
	f.Fuzz(func(t *testing.T, pred []byte) {
		got, err := receipt.DecodeReceipt(pred)
		if err != nil {
			if got != nil {
				t.Fatal("a failed decode returned a value")
			}
			return
		}
		again, err := got.Encode()
		if err != nil || !bytes.Equal(again, pred) {
			t.Fatalf("a decoded predicate does not re-encode to its bytes: %v", err)
		}
	})
}

// seedReceipt is a small valid receipt.
func seedReceipt() *receipt.Receipt {
	return &receipt.Receipt{Format: receipt.Format, ID: "r", Action: "a-r",
		Identity:    receipt.IdentityOf(identity("x")),
		Fingerprint: strings.Repeat("ab", 32), Limits: receipt.LimitsOf(wire.ProfileShort, receipt.Uniform(receipt.EnforcedByNone)),
		Outcome: wire.KnownNotExecuted, Error: &receipt.Refusal{Code: wire.CodeIdentityDrift, Message: "drift"},
		Events: []receipt.Event{{Type: receipt.EventRequested}}}
}
