package clid

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"warrant/broker/view"
	"warrant/receipt"
	"warrant/wire"
)

// Keys are created at the first Open: keys/ 0700, both files 0600.
func TestReceiptKeysPrivate(t *testing.T) {
	r := newStateRig(t)
	dir := filepath.Join(r.state, "keys")
	fi, err := os.Stat(dir)
	must(t, err)
	if fi.Mode().Perm() != 0o700 {
		t.Fatalf("keys/ has mode %v", fi.Mode().Perm())
	}
	for _, f := range []string{receipt.SigningKeyFile, receipt.MACKeyFile} {
		fi, err := os.Lstat(filepath.Join(dir, f))
		must(t, err)
		if fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
			t.Fatalf("%s has mode %v", f, fi.Mode())
		}
	}
}

// Receipts sealed through the broker verify with `broker receipts
// verify` while the broker holds the state lock; the action's status
// carries its receipt id; list and show read the same log.
func TestReceiptsSealedVerify(t *testing.T) {
	r := newStateRig(t)
	var handles []string
	for range 4 {
		handles = append(handles, r.run())
	}
	st, err := r.b.Journal().Status(context.Background(), handles[2])
	must(t, err)
	if st.State != wire.StateTerminal || st.Result == nil || st.Result.ReceiptID == "" {
		t.Fatalf("status of a sealed action: %+v", st)
	}
	code, out := r.cli("receipts", "verify")
	if code != 0 || !strings.Contains(out, "4 entries: 4 receipt(s)") || !strings.Contains(out, "OK:") {
		t.Fatalf("verify: %d\n%s", code, out)
	}
	code, out = r.cli("receipts", "list", "--json")
	var listing view.List[logEntry]
	if code != 0 || json.Unmarshal([]byte(out), &listing) != nil || len(listing.Items) != 4 || listing.Truncated ||
		listing.NextAfter != nil || listing.Items[2].Receipt == nil || listing.Items[2].Receipt.ID != st.Result.ReceiptID ||
		listing.Items[2].Receipt.Outcome != "exited" || listing.Items[2].Receipt.Body != "retained" {
		t.Fatalf("list --json: %d %+v\n%s", code, listing, out)
	}
	// Paged: two, then the rest after the cursor the first page gives.
	var first, rest view.List[logEntry]
	code, out = r.cli("receipts", "list", "--json", "--limit", "2")
	if code != 0 || json.Unmarshal([]byte(out), &first) != nil || len(first.Items) != 2 || !first.Truncated || first.NextAfter == nil {
		t.Fatalf("list --json --limit 2: %d\n%s", code, out)
	}
	code, out = r.cli("receipts", "list", "--json", "--limit", "2", "--after", *first.NextAfter)
	if code != 0 || json.Unmarshal([]byte(out), &rest) != nil || len(rest.Items) != 2 || rest.Truncated || rest.NextAfter != nil ||
		rest.Items[0].Receipt.ID != listing.Items[2].Receipt.ID {
		t.Fatalf("list --json --after %s: %d\n%s", *first.NextAfter, code, out)
	}
	if code, out := r.cli("receipts", "list", "--after", "99"); code != 2 {
		t.Fatalf("list --after a cursor of no entry: %d\n%s", code, out)
	}
	code, out = r.cli("receipts", "show", st.Result.ReceiptID)
	for _, want := range []string{"verified", handles[2], r.tool, "outcome exited, exit code 0", "REQUESTED", "APPROVED",
		"EXECUTING", "STARTED", "TERMINATED", "stdout    observed 6 bytes", "cgroup_populated_0", "the approved executable"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("show lacks %q: %d\n%s", want, code, out)
		}
	}
}

// Each tamper of the stored log is caught by the CLI's verify, located
// by index and kind, with a non-zero exit.
func TestReceiptsVerifyDetectsTampering(t *testing.T) {
	cases := []struct {
		name, sql string
		want      []string
	}{
		{"edit", `UPDATE receipt_log SET envelope = CAST(substr(envelope, 1, 200) || 'X' || substr(envelope, 202) AS BLOB) WHERE idx = 2`,
			[]string{"entry #2: bad_signature"}},
		{"delete", `DELETE FROM receipt_log WHERE idx = 2`, []string{"entry #2: moved", "checkpoint 5: truncated"}},
		{"swap", `UPDATE receipt_log SET idx = 100 WHERE idx = 1; UPDATE receipt_log SET idx = 1 WHERE idx = 2; UPDATE receipt_log SET idx = 2 WHERE idx = 100`,
			[]string{"entry #1: moved", "entry #2: moved"}},
		{"truncate", `DELETE FROM receipt_log WHERE idx >= 3`, []string{"checkpoint 4: truncated", "checkpoint 5: truncated"}},
		{"body", `UPDATE receipt_log SET body = CAST('hellO' || char(10) AS BLOB) WHERE idx = 1`, []string{"entry #1: body:"}},
		{"body-removed", `UPDATE receipt_log SET body = NULL WHERE idx = 1`, []string{"entry #1: body_missing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newStateRig(t)
			for range 5 {
				r.run()
			}
			if code, out := r.cli("receipts", "verify"); code != 0 {
				t.Fatalf("before tampering: %d\n%s", code, out)
			}
			if r.tamper(c.sql) == 0 {
				t.Fatal("the tamper changed nothing")
			}
			code, out := r.cli("receipts", "verify")
			for _, w := range c.want {
				if code == 0 || !strings.Contains(out, "PROBLEM "+w) {
					t.Fatalf("verify after %s: exit %d, no %q\n%s", c.name, code, w, out)
				}
			}
		})
	}
}

// Prune deletes retained bodies by policy; verify still passes and says
// which bodies were deleted, when and by which record.
func TestReceiptsPrune(t *testing.T) {
	r := newStateRig(t)
	for range 3 {
		r.run()
	}
	if code, out := r.cli("receipts", "prune", "--older-than", "0s"); code == 0 || !strings.Contains(out, "stop `broker serve` first") {
		t.Fatalf("prune beside a running broker: %d\n%s", code, out)
	}
	r.close()
	code, out := r.cli("receipts", "prune", "--older-than", "0s")
	if code != 0 || !strings.Contains(out, "3 receipt(s)") || !strings.Contains(out, "#0 #1 #2") || !strings.Contains(out, "record #3") {
		t.Fatalf("prune: %d\n%s", code, out)
	}
	if left := r.count(`SELECT count(*) FROM receipt_log WHERE body IS NOT NULL`); left != 0 {
		t.Fatalf("%d bodies left after prune", left)
	}
	code, out = r.cli("receipts", "verify")
	if code != 0 || strings.Count(out, "by deletion record #3") != 3 || !strings.Contains(out, "not physical erasure") {
		t.Fatalf("verify after prune: %d\n%s", code, out)
	}
	if code, out = r.cli("receipts", "prune", "--older-than", "0s"); code != 0 || !strings.Contains(out, "nothing deleted") {
		t.Fatalf("second prune: %d\n%s", code, out)
	}
}

// An action left in flight by a broker that stopped gets an unknown
// receipt at the next Open; the chain still verifies and says where.
func TestReceiptsUnknownAfterCrash(t *testing.T) {
	r := newStateRig(t)
	r.run()
	r.exec.hold = true
	h := r.run()
	r.close() // the broker stops without finishing h
	r.exec.hold = false
	r.open()
	r.run()
	code, out := r.cli("receipts", "verify")
	if code != 0 || !strings.Contains(out, "3 receipt(s)") {
		t.Fatalf("verify: %d\n%s", code, out)
	}
	code, out = r.cli("receipts", "show", h)
	for _, want := range []string{"outcome unknown", "UNKNOWN_OUTCOME", "UNKNOWN_TERMINATION", "EXECUTING", "enforced by unknown",
		"no process was observed", "no exit status", "no evidence that every process"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("show of the unknown receipt lacks %q: %d\n%s", want, code, out)
		}
	}
	if strings.Contains(out, "TERMINATED ") || strings.Contains(out, "pid") {
		t.Fatalf("the unknown receipt claims more than was observed:\n%s", out)
	}
	st, err := r.b.Journal().Status(context.Background(), h)
	must(t, err)
	if st.State != wire.StateUnknown || st.Result.ReceiptID == "" {
		t.Fatalf("status: %+v", st)
	}
	_, list := r.cli("receipts", "list")
	if !strings.Contains(list, "#1    "+st.Result.ReceiptID+"  unknown") {
		t.Fatalf("the unknown receipt is not at #1:\n%s", list)
	}
}

// A checkpointed action the executor refuses to start gets a
// known_not_executed receipt with the refusal and nothing more.
func TestReceiptsNotStarted(t *testing.T) {
	r := newStateRig(t)
	r.exec.fail = wire.Errorf(wire.CodeSandboxUnavailable, "no launcher here")
	h := r.run()
	code, out := r.cli("receipts", "show", h, "--json")
	var shown struct {
		Schema   string          `json:"schema"`
		Verified bool            `json:"verified"`
		Receipt  receipt.Receipt `json:"receipt"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || !shown.Verified || shown.Schema != "warrant.receipts.show/v1" ||
		shown.Receipt.Outcome != wire.KnownNotExecuted || shown.Receipt.Error.Code != wire.CodeSandboxUnavailable ||
		shown.Receipt.Pid != nil || shown.Receipt.Sandbox != nil || shown.Receipt.Limits.EnforcedBy.String() != "none" {
		t.Fatalf("show --json: %d\n%s", code, out)
	}
}

type edVerifier struct{ pub ed25519.PublicKey }

func (v edVerifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(v.pub, data, sig) {
		return dsse.ErrNoSignature
	}
	return nil
}
func (v edVerifier) KeyID() (string, error)   { return receipt.KeyID(v.pub), nil }
func (v edVerifier) Public() crypto.PublicKey { return v.pub }

// Export writes dsse-jsonl that an independent DSSE verifier accepts
// under the key `receipts pubkey` prints, and rejects when edited.
func TestReceiptsExportExternalVerifier(t *testing.T) {
	r := newStateRig(t)
	for range 3 {
		r.run()
	}
	code, keyOut := r.cli("receipts", "pubkey")
	blk, _ := pem.Decode([]byte(keyOut))
	if code != 0 || blk == nil {
		t.Fatalf("pubkey: %d\n%s", code, keyOut)
	}
	pk, err := x509.ParsePKIXPublicKey(blk.Bytes)
	must(t, err)
	ev, err := dsse.NewEnvelopeVerifier(edVerifier{pk.(ed25519.PublicKey)})
	must(t, err)
	code, out := r.cli("receipts", "export", "--format", "dsse-jsonl")
	lines := bytes.Split(bytes.TrimSpace([]byte(out)), []byte("\n"))
	if code != 0 || len(lines) != 3 {
		t.Fatalf("export: %d\n%s", code, out)
	}
	for i, line := range lines {
		var env dsse.Envelope
		must(t, json.Unmarshal(line, &env))
		if _, err := ev.Verify(context.Background(), &env); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		env.Payload = env.Payload[:len(env.Payload)-8] + fmt.Sprintf("%08d", i)
		if _, err := ev.Verify(context.Background(), &env); err == nil {
			t.Fatalf("line %d: an edited envelope verified", i)
		}
	}
	// --json: the same envelopes, verbatim, in one listing object.
	code, out = r.cli("receipts", "export", "--json")
	var doc struct {
		Schema string `json:"schema"`
		KeyID  string `json:"keyid"`
		view.List[exported]
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Schema != "warrant.receipts.export/v1" ||
		doc.KeyID != receipt.KeyID(pk.(ed25519.PublicKey)) || len(doc.Items) != 3 || doc.Truncated {
		t.Fatalf("export --json: %d\n%s", code, out)
	}
	for i, it := range doc.Items {
		var compact bytes.Buffer
		must(t, json.Compact(&compact, it.Envelope))
		if it.Index != int64(i) || !bytes.Equal(compact.Bytes(), lines[i]) {
			t.Fatalf("export --json item %d is not line %d of dsse-jsonl:\n%s\n%s", i, i, compact.Bytes(), lines[i])
		}
	}
	if code, out := r.cli("receipts", "export", "--limit", "1"); code != 2 {
		t.Fatalf("export --limit without --json: %d\n%s", code, out)
	}
	if code, out := r.cli("receipts", "export", "--format", "json"); code != 2 {
		t.Fatalf("unknown format: %d\n%s", code, out)
	}
}
