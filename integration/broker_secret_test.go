//go:build linux

package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/receipt"
	"warrant/wire"
)

// splitSecret prints a GitHub-token-shaped secret (its argument reversed,
// so the secret itself is in no argv, journal identity or receipt) in two
// writes with a pause between, so the broker reads it as two chunks.
const splitSecret = `
import os, sys, time
s = sys.argv[1][::-1]
first = "token=" + s[:len(s)//2]
os.write(1, first.encode())
time.sleep(0.3)
os.write(1, (s[len(s)//2:] + " end\n").encode())
`

// TestBrokerSecretSplitAcrossChunks: a secret split across two pipe reads
// leaves zero secret bytes in the `broker run --json` output and in every
// file of the state directory (journal, WAL, stored receipt bodies), and
// the receipt records the hit without the secret.
func TestBrokerSecretSplitAcrossChunks(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	secret := "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" // 36 characters after the prefix
	reversed := []byte(secret)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	raw, j, code := a.run(wire.ProfileShort, python(t), "-c", splitSecret, string(reversed))
	if code != 0 || j.Outcome != "exited" {
		t.Fatalf("exit %d: %s", code, raw)
	}
	half := len(secret) / 2
	for _, part := range []string{secret, secret[:half], secret[half:]} {
		if strings.Contains(raw, part) {
			t.Fatalf("secret bytes %q reached the broker run --json output:\n%s", part, raw)
		}
	}
	if !strings.HasPrefix(j.Stdout.Text, "token=") || !strings.HasSuffix(j.Stdout.Text, " end\n") {
		t.Fatalf("the output around the secret is gone too: %q", j.Stdout.Text)
	}
	if want := uint64(len("token=") + len(secret) + len(" end\n")); j.Stdout.ObservedBytes != want {
		t.Fatalf("observed %d bytes, the target wrote %d", j.Stdout.ObservedBytes, want)
	}
	rc := d.Receipt(*j.ReceiptID)
	ev := streamOf(t, rc, receipt.Stdout)
	if ev.Chunks < 2 || len(ev.ChunkRecords) < 2 || ev.ChunkRecords[0].RawBytes != uint64(len("token=")+half) {
		t.Fatalf("the secret was not split across chunks as intended (chunks %d, records %+v); the test proves nothing",
			ev.Chunks, ev.ChunkRecords)
	}
	if len(ev.Redactions) == 0 {
		t.Fatalf("the receipt records no redaction hit: %+v", ev)
	}
	d.kill() // flush nothing more; read what is on disk
	files := 0
	err := filepath.WalkDir(d.State, func(p string, e os.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, part := range []string{secret, secret[:half], secret[half:]} {
			if bytes.Contains(b, []byte(part)) {
				t.Errorf("secret bytes %q are stored in %s", part, p)
			}
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("scan the state directory: %d files, %v", files, err)
	}
}

// TestBrokerEnvironmentCanary: a canary in the daemon's own environment
// does not reach the target, which sees the action's environment only.
func TestBrokerEnvironmentCanary(t *testing.T) {
	d := shared(t)
	if environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", d.Pid())); err != nil || !bytes.Contains(environ, []byte(brokerCanary)) {
		t.Fatalf("the canary is not in the daemon's environment (%v); the test would prove nothing", err)
	}
	a := d.newAgent(t)
	lookPath(t, "env")
	_, r := a.Run(a.request(wire.ProfileShort, "env"))
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("env: %s %+v, stderr %q", r.Outcome, r.Error, r.Stderr.Text)
	}
	if !strings.Contains(r.Stdout.Text, "HOME=") {
		t.Fatalf("the target printed no environment: %q", r.Stdout.Text)
	}
	if strings.Contains(r.Stdout.Text, brokerCanary) {
		t.Fatalf("the daemon's environment reached the target:\n%s", r.Stdout.Text)
	}
}
