//go:build linux

package integration

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warrant/broker"
	"warrant/receipt"
	"warrant/wire"
)

// `broker serve --witness DIR` copies every signed checkpoint to the
// witness file in DIR: read back, each note verifies under the key
// `receipts pubkey` prints and covers one more entry, the last is what
// `receipts checkpoint` prints, and verify holds the log to the file. A
// DIR inside the state directory stops serve before it serves.
func TestBrokerServeWitness(t *testing.T) {
	wdir := t.TempDir()
	d := startBroker(t, "", "--witness", wdir)
	a := d.newAgent(t)
	for range 3 {
		if _, r := a.Run(a.request(wire.ProfileShort, "true")); r.Outcome != wire.Exited {
			t.Fatalf("run: %+v", r)
		}
	}
	pemText, code := d.CLI("receipts", "pubkey")
	blk, _ := pem.Decode([]byte(pemText))
	if code != 0 || blk == nil {
		t.Fatalf("receipts pubkey: %d\n%s", code, pemText)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pub := k.(ed25519.PublicKey)
	file := filepath.Join(wdir, broker.WitnessFile(pub))
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := receipt.ParseCheckpoints(raw)
	if err != nil || len(notes) != 3 {
		t.Fatalf("witness file: %v, %d checkpoints\n%s", err, len(notes), raw)
	}
	for i, n := range notes {
		if tr, err := receipt.OpenCheckpoint(n, pub); err != nil || tr.N != int64(i+1) {
			t.Fatalf("witness checkpoint %d: %v, size %d", i, err, tr.N)
		}
	}
	if latest, code := d.CLI("receipts", "checkpoint"); code != 0 || latest != string(notes[2]) {
		t.Fatalf("receipts checkpoint: %d\n%s\nwant\n%s", code, latest, notes[2])
	}
	pubFile := filepath.Join(t.TempDir(), "receipts.pub")
	if err := os.WriteFile(pubFile, []byte(pemText), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := d.CLI("receipts", "verify", "--pubkey", pubFile, "--checkpoint", file); code != 0 || !strings.Contains(out, "extends all 3 checkpoint(s)") {
		t.Fatalf("verify against the witness: %d\n%s", code, out)
	}

	state := filepath.Join(t.TempDir(), "state")
	inside := filepath.Join(state, "witness")
	if err := os.MkdirAll(inside, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), daemonSafety)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.broker, "serve", "--state", state, "--witness", inside)
	cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); !ok || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "is inside the state directory") {
		t.Fatalf("serve with a witness inside the state directory: %v\n%s", err, out)
	}
	if ents, err := os.ReadDir(inside); err != nil || len(ents) != 0 {
		t.Fatalf("serve wrote inside the state directory: %v %v", ents, err)
	}
}
