//go:build linux

package integration

import (
	"archive/tar"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// The metadata budget of one action, as docs/threats.md and
// broker/internal/metadata document it: a burst of calls answered at
// once, then a sustained rate.
const (
	metaBurst = 100_000
	metaRate  = 10_000 // per second
)

// metaFlood chmods from PROCS processes at once, each its own file, for
// SECONDS, and prints the calls made and how many failed.
const metaFlood = `
import os, sys, time
procs, secs = int(sys.argv[1]), float(sys.argv[2])
r, w = os.pipe()
end = time.monotonic() + secs
for i in range(procs):
    if os.fork() == 0:
        os.close(r)
        p = "f%d" % i
        open(p, "w").close()
        n = failed = 0
        while time.monotonic() < end:
            for _ in range(100):
                try:
                    os.chmod(p, 0o600 if n & 1 else 0o644)
                except OSError:
                    failed += 1
                n += 1
        os.write(w, b"%d %d\n" % (n, failed))
        os._exit(0)
os.close(w)
out = b""
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    out += chunk
counts = [l.split() for l in out.decode().split("\n") if l]
print("calls", sum(int(c[0]) for c in counts), "failed", sum(int(c[1]) for c in counts))
`

// TestBrokerMetadataFloodIsBudgeted: issue 31, reproduction 7. A target
// flooding chmod from 16 processes for 10 s is held to the action's
// budget: the broker answers at most the burst plus the rate for each
// second of the action's life (from its receipt: calls, start, end), and
// holds answers back rather than failing them (every call performed); the
// receipt records the broker's CPU time for them and how long answers
// were held. A host too slow to flood past the budget (a count short of
// the bound) cannot show the holding; it says so.
func TestBrokerMetadataFloodIsBudgeted(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	h, r := a.Run(a.request(wire.ProfileStandard, python(t), "-c", metaFlood, "16", "10"))
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("the flood must run to its end: %s %+v\n%s\n%s", r.Outcome, r.Error, r.Stdout.Text, r.Stderr.Text)
	}
	f := strings.Fields(r.Stdout.Text)
	if len(f) != 4 || f[0] != "calls" || f[2] != "failed" {
		t.Fatalf("the flood reports %q", r.Stdout.Text)
	}
	rc := d.Receipt(h)
	m := rc.Metadata
	if m == nil || rc.Start == nil || rc.End == nil {
		t.Fatalf("the receipt has no metadata counts or times: %+v", m)
	}
	secs := float64(rc.End.MonoNs-rc.Start.MonoNs) / 1e9
	answered := m.Performed + m.Refused
	bound := metaBurst + uint64(metaRate*secs)
	t.Logf("%d calls in %.2f s (the target counted %s, %s failed): %.0f/s; broker CPU %.3f s (%.1f µs a call, %.0f%% of a core); held %.2f s; bound %d",
		answered, secs, f[1], f[3], float64(answered)/secs, float64(m.BrokerCPUNs)/1e9,
		float64(m.BrokerCPUNs)/1e3/float64(max(answered, 1)), float64(m.BrokerCPUNs)/1e7/secs, float64(m.HeldNs)/1e9, bound)
	if answered > bound {
		t.Errorf("the broker answered %d calls in %.2f s, past the budget's %d (burst %d + %d/s)", answered, secs, bound, metaBurst, metaRate)
	}
	if f[3] != "0" || m.Refused != 0 {
		t.Errorf("calls failed (%s by the target's count, %d refused): the budget must hold answers back, not fail them", f[3], m.Refused)
	}
	if m.BrokerCPUNs == 0 {
		t.Errorf("the receipt does not record the broker's CPU time: %+v", m)
	}
	// Answers are held only once the bucket is empty, which leaves the
	// count at the bound: within 10 ms of the rate, the budget was met.
	switch reached := answered+metaRate/100 >= bound; {
	case reached && m.HeldNs == 0:
		t.Errorf("%d calls in %.2f s reached the budget and no answer was held back: %+v", answered, secs, m)
	case !reached:
		t.Logf("note: this host answered %.0f calls/s, too few to reach the budget: the holding is not shown (TestBudgetBurstThenRate shows it)", float64(answered)/secs)
	}
}

// TestBrokerMetadataBudgetSparesOrdinaryWork: extracting a 10,000-file
// archive with its modes and times (`tar -xpf`, a mode, times and owner
// for every file) in the workspace never touches the budget: the
// receipt's held time is zero, and the calls it counts are fewer than
// the burst.
func TestBrokerMetadataBudgetSparesOrdinaryWork(t *testing.T) {
	lookPath(t, "tar")
	d := shared(t)
	a := d.newAgent(t)
	writeTarTree(t, filepath.Join(a.WS, "tree.tar"), 10_000)
	start := time.Now()
	h, r := a.Run(a.request(wire.ProfileStandard, "/bin/sh", "-c", "tar -xpf tree.tar && find tree -type f | wc -l"))
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 || strings.TrimSpace(r.Stdout.Text) != "10000" {
		t.Fatalf("tar -xpf: %s %+v\n%s\n%s", r.Outcome, r.Error, r.Stdout.Text, r.Stderr.Text)
	}
	rc := d.Receipt(h)
	m := rc.Metadata
	if m == nil {
		t.Fatal("the receipt counts no metadata calls")
	}
	secs := float64(rc.End.MonoNs-rc.Start.MonoNs) / 1e9
	t.Logf("tar -xpf of 10,000 files: %d calls in %.2f s (%.0f/s; %s end to end); broker CPU %.3f s; held %d ns",
		m.Performed+m.Refused, secs, float64(m.Performed+m.Refused)/secs, time.Since(start).Round(time.Millisecond), float64(m.BrokerCPUNs)/1e9, m.HeldNs)
	if m.Performed < 10_000 {
		t.Errorf("tar set the metadata of %d objects, want at least one a file", m.Performed)
	}
	if m.HeldNs != 0 {
		t.Errorf("the budget held tar's answers back for %d ns", m.HeldNs)
	}
	if st := statMeta(t, filepath.Join(a.WS, "tree", "d7", "f77")); st.mode&0o777 != 0o640 || st.mtime.Sec != 1000000000 {
		t.Errorf("an extracted file reads back as mode %o mtime %d, want 0640 1000000000", st.mode&0o777, st.mtime.Sec)
	}
}

// writeTarTree writes an archive of n files (tree/dI/fJ, 100 a
// directory, mode 0640, mtime 10^9).
func writeTarTree(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := tar.NewWriter(f)
	mtime := time.Unix(1_000_000_000, 0)
	for i := range n {
		if i%100 == 0 {
			if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("tree/d%d/", i/100), Mode: 0o755, ModTime: mtime}); err != nil {
				t.Fatal(err)
			}
		}
		body := []byte("x")
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("tree/d%d/f%d", i/100, i%100), Mode: 0o640, Size: 1, ModTime: mtime}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
