package clid

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"warrant/internal/jsonschema"

	"warrant/broker/cli"

	"warrant/broker"
	"warrant/receipt"
)

// keep saves what an operator keeps outside the state directory: the
// output of `receipts pubkey` and of `receipts checkpoint`. It returns
// the two files.
func (r *stateRig) keep() (pubFile, cpFile string) {
	r.t.Helper()
	dir := r.t.TempDir()
	pubFile, cpFile = filepath.Join(dir, "receipts.pub"), filepath.Join(dir, "checkpoint")
	code, pub := r.cli("receipts", "pubkey")
	if code != 0 {
		r.t.Fatalf("receipts pubkey: %d\n%s", code, pub)
	}
	code, cp := r.cli("receipts", "checkpoint")
	if code != 0 || !strings.HasPrefix(cp, "warrant receipt log\n") {
		r.t.Fatalf("receipts checkpoint: %d\n%s", code, cp)
	}
	must(r.t, os.WriteFile(pubFile, []byte(pub), 0o600))
	must(r.t, os.WriteFile(cpFile, []byte(cp), 0o600))
	return pubFile, cpFile
}

// receiptID is the receipt id the journal names for handle.
func (r *stateRig) receiptID(handle string) string {
	r.t.Helper()
	st, err := r.b.Journal().Status(context.Background(), handle)
	must(r.t, err)
	if st.Result == nil || st.Result.ReceiptID == "" {
		r.t.Fatalf("%s has no receipt: %+v", handle, st)
	}
	return st.Result.ReceiptID
}

// wantVerifyFails requires `receipts verify ARGS` to exit
// cli.ExitVerifyFailed, saying every one of want.
func (r *stateRig) wantVerifyFails(args []string, want ...string) {
	r.t.Helper()
	code, out := r.cli(append([]string{"receipts", "verify"}, args...)...)
	if code != cli.ExitVerifyFailed || !strings.Contains(out, "FAILED:") || strings.Contains(out, "OK:") {
		r.t.Fatalf("verify %q: exit %d, want %d and FAILED\n%s", args, code, cli.ExitVerifyFailed, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			r.t.Fatalf("verify %q does not say %q:\n%s", args, w, out)
		}
	}
}

// An untampered log verifies against the key and checkpoints its
// operator kept, also after more appends; without them verify passes but
// says that nothing outside was checked.
func TestReceiptsVerifyAnchored(t *testing.T) {
	r := newStateRig(t)
	for range 3 {
		r.run()
	}
	pub, cp1 := r.keep()
	for range 2 {
		r.run()
	}
	_, cp2 := r.keep()
	both := filepath.Join(t.TempDir(), "both")
	a, _ := os.ReadFile(cp1)
	b, _ := os.ReadFile(cp2)
	must(t, os.WriteFile(both, append(append(a, '\n'), b...), 0o600))
	code, out := r.cli("receipts", "verify", "--pubkey", pub, "--checkpoint", both)
	if code != 0 || !strings.Contains(out, "the log extends the outside checkpoint of 5 entries") ||
		!strings.Contains(out, "the state directory's key is the key you gave, and the log extends all 2 checkpoint(s)") {
		t.Fatalf("verify anchored: %d\n%s", code, out)
	}
	code, out = r.cli("receipts", "verify")
	if code != 0 || !strings.Contains(out, "Nothing held outside the state directory was checked") {
		t.Fatalf("verify: %d\n%s", code, out)
	}
	code, out = r.cli("receipts", "checkpoint", "--json")
	if code != 0 || !strings.Contains(out, `"schema": "warrant.receipts.checkpoint/v1"`) || !strings.Contains(out, `"size": 5`) ||
		!strings.Contains(out, `"note": "warrant receipt log\n5\n`) {
		t.Fatalf("checkpoint --json: %d\n%s", code, out)
	}
	wantSchema(t, "receipts.checkpoint.v1.json", out)
}

// Deleting the last row and its checkpoint leaves a log whose newest
// checkpoint covers it: verify still fails, naming the receipt the last
// action names, and with the operator's checkpoint says tail cut. When
// the action's receipt id is erased too, only the kept checkpoint
// catches it.
func TestReceiptsVerifyTailCut(t *testing.T) {
	r := newStateRig(t)
	var last string
	for range 5 {
		last = r.run()
	}
	id := r.receiptID(last)
	pub, cp := r.keep()
	anchored := []string{"--pubkey", pub, "--checkpoint", cp}
	if r.tamper(`DELETE FROM receipt_log WHERE idx = 4; DELETE FROM receipt_checkpoints WHERE size = 5`) == 0 {
		t.Fatal("the tamper changed nothing")
	}
	if n := r.count(`SELECT count(*) FROM receipt_log`); n != 4 {
		t.Fatalf("%d rows left", n)
	}
	r.wantVerifyFails(nil, "missing receipts: the journal's actions name 1 receipt(s) the log does not hold: "+id)
	r.wantVerifyFails(anchored, "tail cut: the log holds 4 entries, but outside checkpoint 1 covers 5: the last 1 were deleted")
	if r.tamper(`UPDATE actions SET receipt_id = '' WHERE receipt_id = '`+id+`'`) != 1 {
		t.Fatal("the tamper changed nothing")
	}
	if code, out := r.cli("receipts", "verify"); code != 0 || !strings.Contains(out, "Nothing held outside the state directory was checked") {
		t.Fatalf("the state directory alone cannot show this cut, and verify must say it checked nothing outside: %d\n%s", code, out)
	}
	r.wantVerifyFails(anchored, "tail cut:")
}

// Deleting every row and checkpoint: the actions still name all five
// receipts, and the kept checkpoint says whole-log cut.
func TestReceiptsVerifyWholeLogCut(t *testing.T) {
	r := newStateRig(t)
	var ids []string
	for range 5 {
		ids = append(ids, r.receiptID(r.run()))
	}
	pub, cp := r.keep()
	if r.tamper(`DELETE FROM receipt_log; DELETE FROM receipt_checkpoints`) == 0 {
		t.Fatal("the tamper changed nothing")
	}
	if n := r.count(`SELECT count(*) FROM receipt_log`); n != 0 {
		t.Fatalf("%d rows left", n)
	}
	r.wantVerifyFails(nil, append([]string{"missing receipts: the journal's actions name 5 receipt(s) the log does not hold"}, ids...)...)
	r.wantVerifyFails([]string{"--pubkey", pub, "--checkpoint", cp}, "whole-log cut: the log is empty, but outside checkpoint 1 covers 5 entries")
}

// The broker checkpoints every append, so entries after the newest
// checkpoint mean checkpoints were deleted (or replaced by older ones).
func TestReceiptsVerifyUnanchoredTail(t *testing.T) {
	r := newStateRig(t)
	for range 3 {
		r.run()
	}
	r.tamper(`DELETE FROM receipt_checkpoints WHERE size = 3`)
	r.wantVerifyFails(nil, "unanchored tail: the last 1 of 3 entries come after the newest valid checkpoint (of 2)")
	r.tamper(`DELETE FROM receipt_checkpoints`)
	r.wantVerifyFails(nil, "unanchored tail: the last 3 of 3 entries")
}

// copyKeys copies the receipt keys of state from into the state
// directory to (created), as a thief of from's keys would.
func copyKeys(t *testing.T, from, to string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(to, "keys"), 0o700))
	for _, f := range []string{receipt.SigningKeyFile, receipt.MACKeyFile} {
		raw, err := os.ReadFile(filepath.Join(from, "keys", f))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(to, "keys", f), raw, 0o600))
	}
}

// A checkpoint that is not of this log fails: one from another state
// directory (another key), one signed with this log's own key over
// another history, and the stored checkpoints replaced by another log's.
func TestReceiptsVerifyCheckpointSwapped(t *testing.T) {
	r := newStateRig(t)
	other := newStateRig(t)
	twin := newStateRigWith(t, func(state string) { copyKeys(t, r.state, state) }) // r's key, another history
	for range 5 {
		r.run()
		other.run()
		twin.run()
	}
	pub, _ := r.keep()
	_, otherCP := other.keep()
	_, twinCP := twin.keep()
	r.wantVerifyFails([]string{"--pubkey", pub, "--checkpoint", otherCP},
		"checkpoint swapped: outside checkpoint 1 is not a checkpoint signed by the key you hold")
	r.wantVerifyFails([]string{"--pubkey", pub, "--checkpoint", twinCP},
		"checkpoint swapped: the first 5 entries of the log do not hash to the root of outside checkpoint 1")
	raw, err := os.ReadFile(otherCP)
	must(t, err)
	r.tamper(`DELETE FROM receipt_checkpoints; INSERT INTO receipt_checkpoints (size, note, created_unix) VALUES (5, X'` + hex.EncodeToString(raw) + `', 0)`)
	r.wantVerifyFails(nil, "PROBLEM checkpoint 1: checkpoint:", "unanchored tail: the last 5 of 5 entries")
}

// A key other than the operator's fails, said as pubkey swapped: another
// state directory's key given as --pubkey, and this state directory's
// key files replaced by another's.
func TestReceiptsVerifyPubkeySwapped(t *testing.T) {
	r := newStateRig(t)
	other := newStateRig(t)
	for range 3 {
		r.run()
		other.run()
	}
	pub, cp := r.keep()
	otherPub, _ := other.keep()
	r.wantVerifyFails([]string{"--pubkey", otherPub}, "pubkey swapped: the key stored beside the log", "entry #0: foreign_key")
	r.close()
	copyKeys(t, other.state, r.state)
	if got := readKeyID(t, r); got != readKeyIDFile(t, otherPub) {
		t.Fatalf("the key files were not replaced: %s", got)
	}
	r.wantVerifyFails([]string{"--pubkey", pub, "--checkpoint", cp}, "pubkey swapped: the key stored beside the log ("+readKeyIDFile(t, otherPub)+
		") is not the key you hold ("+readKeyIDFile(t, pub)+")")
	r.wantVerifyFails(nil, "entry #0: foreign_key")
}

// readKeyID is the key id of the state directory's key, as read by verify.
func readKeyID(t *testing.T, r *stateRig) string {
	l, err := broker.ReadReceiptLog(context.Background(), r.state)
	must(t, err)
	return receipt.KeyID(l.Public)
}

// readKeyIDFile is the key id of the PEM public key in path.
func readKeyIDFile(t *testing.T, path string) string {
	raw, err := os.ReadFile(path)
	must(t, err)
	blk, _ := pem.Decode(raw)
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	must(t, err)
	return receipt.KeyID(k.(ed25519.PublicKey))
}

// A broker with a witness copies every checkpoint to the witness file;
// each note there verifies under the operator's key, a restart adds no
// duplicate, status reports it, and the file anchors verify.
func TestReceiptsWitness(t *testing.T) {
	r := newStateRig(t)
	r.close()
	r.witness = t.TempDir()
	r.open()
	for range 3 {
		r.run()
	}
	pubFile, _ := r.keep()
	raw, err := os.ReadFile(pubFile)
	must(t, err)
	blk, _ := pem.Decode(raw)
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	must(t, err)
	pub := k.(ed25519.PublicKey)
	file := filepath.Join(r.witness, broker.WitnessFile(pub))
	wantSizes := func(want ...int64) {
		t.Helper()
		raw, err := os.ReadFile(file)
		must(t, err)
		notes, err := receipt.ParseCheckpoints(raw)
		must(t, err)
		if len(notes) != len(want) {
			t.Fatalf("the witness holds %d checkpoints, want %d:\n%s", len(notes), len(want), raw)
		}
		for i, n := range notes {
			tr, err := receipt.OpenCheckpoint(n, pub)
			if err != nil || tr.N != want[i] {
				t.Fatalf("witness checkpoint %d: %v, size %d, want %d", i, err, tr.N, want[i])
			}
		}
	}
	wantSizes(1, 2, 3)
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("witness file: %v %v", fi, err)
	}
	r.close()
	r.open()
	wantSizes(1, 2, 3)
	r.run()
	wantSizes(1, 2, 3, 4)
	code, out := r.cli("status")
	if code != 0 || !strings.Contains(out, "witness: "+file) || !strings.Contains(out, "holds the log's newest checkpoint (4 entries)") {
		t.Fatalf("status: %d\n%s", code, out)
	}
	code, out = r.cli("status", "--json")
	var st struct {
		State   string `json:"state"`
		Witness *struct {
			Path              string `json:"path"`
			Failing           bool   `json:"failing"`
			LogCheckpoint     int64  `json:"log_checkpoint"`
			WitnessCheckpoint int64  `json:"witness_checkpoint"`
		} `json:"witness"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.State == "" || st.Witness == nil || st.Witness.Path != file ||
		st.Witness.Failing || st.Witness.WitnessCheckpoint != 4 || st.Witness.LogCheckpoint != 4 {
		t.Fatalf("status --json: %d %+v\n%s", code, st.Witness, out)
	}
	wantSchema(t, "capability.v1.json", out)
	code, out = r.cli("receipts", "verify", "--pubkey", pubFile, "--checkpoint", file)
	if code != 0 || !strings.Contains(out, "extends all 4 checkpoint(s)") {
		t.Fatalf("verify against the witness: %d\n%s", code, out)
	}
	r.tamper(`DELETE FROM receipt_log WHERE idx = 3; DELETE FROM receipt_checkpoints WHERE size = 4`)
	r.wantVerifyFails([]string{"--pubkey", pubFile, "--checkpoint", file}, "tail cut: the log holds 3 entries, but outside checkpoint 4 covers 4")
	if code, out = r.cli("status"); code != 0 || !strings.Contains(out, "AHEAD OF THE LOG: its last checkpoint covers 4 entries; the log's newest covers 3") {
		t.Fatalf("status after the cut: %d\n%s", code, out)
	}
}

// A witness directory inside the state directory (directly, as the state
// directory itself, or through a symbolic link) or one that does not
// exist stops the broker from opening; nothing is written there.
func TestReceiptsWitnessRefused(t *testing.T) {
	r := newStateRig(t)
	r.close()
	inside := filepath.Join(r.state, "witness")
	must(t, os.Mkdir(inside, 0o700))
	link := filepath.Join(t.TempDir(), "link")
	must(t, os.Symlink(inside, link))
	for dir, want := range map[string]string{inside: "inside the state directory", r.state: "inside the state directory",
		link: "inside the state directory", filepath.Join(t.TempDir(), "none"): "the directory must exist"} {
		_, err := broker.Open(context.Background(), broker.Config{StateDir: r.state, Executor: r.exec, Witness: dir})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("witness %s: %v, want %q", dir, err, want)
		}
	}
	if ents, err := os.ReadDir(inside); err != nil || len(ents) != 0 {
		t.Fatalf("something was written inside the state directory: %v %v", ents, err)
	}
}

// wantSchema requires that out validates against the schema file of
// docs/schemas.
func wantSchema(t *testing.T, file, out string) {
	t.Helper()
	schemas, err := jsonschema.Load("../../docs/schemas")
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(file, []byte(out)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
