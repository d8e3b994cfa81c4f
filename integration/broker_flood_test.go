//go:build linux

package integration

import (
	"fmt"
	"strconv"
	"testing"

	"warrant/internal/profile"
	"warrant/receipt"
	"warrant/wire"
)

// flood writes exactly argv[1] bytes of text to stdout with os.write,
// counting what the kernel took, then reports its own count on stderr.
const flood = `
import os, sys
n = int(sys.argv[1])
buf = (b"warrant flood 0123456789 abcdefghijklmnopqrstuvwxyz\n" * 20000)[:1 << 20]
w = 0
while w < n:
    w += os.write(1, buf[:min(len(buf), n - w)])
sys.stderr.write("wrote %d\n" % w)
`

// floodBytes is 10 GiB, as docs/threats.md asks. Through the whole chain this
// machine (2 cores) moves about 1 GiB/s of it when nothing else runs
// (BenchmarkStdoutFlood), so it takes 10 to 20 s; -short uses 1 GiB and
// says so.
const floodBytes = 10 << 30

// TestBrokerStdoutFlood sends 10 GiB through a real daemon under the long
// profile. The daemon's peak RSS (VmHWM, from /proc) stays under 64 MiB,
// the observed count equals what the target says it wrote, exactly, and
// retained = head + tail, dropped = the rest, in the result and in the
// receipt.
func TestBrokerStdoutFlood(t *testing.T) {
	size := int64(floodBytes)
	if testing.Short() {
		size = 1 << 30
		t.Logf("-short: flooding %d bytes, not 10 GiB", size)
	}
	d := startBroker(t, "")
	a := d.newAgent(t)
	h, r := a.Run(a.request(wire.ProfileLong, python(t), "-c", flood, strconv.FormatInt(size, 10)))
	hwm := d.HWM()
	t.Logf("broker serve pid %d: VmHWM %.1f MiB after %d bytes", d.Pid(), float64(hwm)/(1<<20), size)
	if hwm >= 64<<20 {
		t.Errorf("the broker's peak RSS is %d bytes, over 64 MiB", hwm)
	}
	if r.Outcome != wire.Exited || *r.ExitCode != 0 {
		t.Fatalf("%s: %s %+v, stderr %q", h, r.Outcome, r.Error, r.Stderr.Text)
	}
	var wrote uint64
	if _, err := fmt.Sscanf(r.Stderr.Text, "wrote %d\n", &wrote); err != nil {
		t.Fatalf("the target did not report its count: %q", r.Stderr.Text)
	}
	keep := uint64(2 * profile.Of(wire.ProfileLong).Retain)
	out := r.Stdout
	if wrote != uint64(size) || out.ObservedBytes != wrote {
		t.Fatalf("the target wrote %d of %d bytes; the broker observed %d", wrote, size, out.ObservedBytes)
	}
	if out.RetainedBytes != keep || out.DroppedBytes != wrote-keep || !out.Truncated {
		t.Fatalf("retained %d (want head+tail %d), dropped %d (want %d), truncated %v",
			out.RetainedBytes, keep, out.DroppedBytes, wrote-keep, out.Truncated)
	}
	rc := d.Receipt(r.ReceiptID)
	ev := streamOf(t, rc, receipt.Stdout)
	if ev.ObservedBytes != wrote || ev.RedactedBytes != wrote || ev.RetainedBytes != keep || ev.DroppedBytes != wrote-keep ||
		ev.Head != (receipt.Range{Start: 0, End: keep / 2}) || ev.Tail != (receipt.Range{Start: wrote - keep/2, End: wrote}) ||
		ev.Truncation != receipt.TruncRetention {
		t.Fatalf("receipt stdout evidence does not account for the flood exactly: %+v", ev)
	}
}

// streamOf returns the receipt's evidence of stream s.
func streamOf(t testing.TB, rc *receipt.Receipt, s receipt.StreamName) *receipt.StreamEvidence {
	t.Helper()
	for i := range rc.Streams {
		if rc.Streams[i].Stream == s {
			return &rc.Streams[i]
		}
	}
	t.Fatalf("receipt %s has no %s evidence", rc.ID, s)
	return nil
}
