//go:build linux

package integration

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"warrant/internal/logtext"
	"warrant/receipt"
	"warrant/wire"
)

// BenchmarkStdoutThroughput streams 1 GiB through the whole chain
// (launcher, pipes, capture, redaction, digests, receipt) under the long
// profile, beside the same bytes through `… | cat` read by this process,
// in the same loop: zero bytes from `head -c 1G /dev/zero`, and a 1 GiB
// text log with credentials in it (internal/logtext) by `cat FILE`, whose receipt
// must carry the digests of exactly the raw and redacted bytes.
func BenchmarkStdoutThroughput(b *testing.B) {
	const size = 1 << 30
	d := startBroker(b, "")
	lookPath(b, "head")
	lookPath(b, "cat")
	b.Run("zero", func(b *testing.B) {
		a := d.in(b).newAgent(b)
		n := strconv.Itoa(size)
		benchStream(b, a, a.request(wire.ProfileLong, "head", "-c", n, "/dev/zero"),
			"head -c "+n+" /dev/zero | cat", size, nil)
	})
	b.Run("text", func(b *testing.B) {
		d := d.in(b)
		a := d.newAgent(b)
		file := filepath.Join(a.WS, "build.log")
		want := writeTextLog(b, file, size, macKey(b, d))
		b.Logf("%s: %d bytes, %d lines, redactions %v", file, size, want.lines, want.hits)
		benchStream(b, a, a.request(wire.ProfileLong, "cat", "build.log"), "cat "+file+" | cat", size,
			func(r *wire.Result) { want.check(b, d, r) })
	})
}

// BenchmarkStdoutFlood sends 10 GiB of text through the chain under the
// long profile (one run: -benchtime 1x) beside the same flood through
// `| cat`, and reports the daemon's peak RSS (VmHWM) after it next to
// its peak before the flood, after start-up and a first action.
// TestBrokerStdoutFlood asserts the bound (64 MiB).
func BenchmarkStdoutFlood(b *testing.B) {
	d := startBroker(b, "")
	a := d.newAgent(b)
	py := python(b)
	n := strconv.FormatInt(floodBytes, 10)
	idle := float64(d.HWM()) / (1 << 20)
	benchStream(b, a, a.request(wire.ProfileLong, py, "-c", flood, n),
		py+" -c '"+flood+"' "+n+" | cat", floodBytes, nil)
	b.ReportMetric(float64(d.HWM())/(1<<20), "peak-rss-MiB")
	b.ReportMetric(idle, "start-rss-MiB")
}

// benchStream runs req until b is done, each run beside the shell
// pipeline base read by this process; both must move exactly size bytes,
// and check, if set, is given each run's result (outside the timings).
// It reports the chain's MiB/s, the pipeline's and their ratio. How fast
// the pipeline runs depends on how its last reader reads, and on two
// cores not in one direction, so it is read two ways: 128 KiB at a time,
// as cat reads (cat-MiB/s, x-cat), and by io.Copy into io.Discard, 8 KiB
// at a time, as this benchmark read it before issue 19 (cat8k-MiB/s,
// x-cat8k). The three take turns at going first, so that none always runs
// in the wake of another. Each also reports the CPU time it cost per GiB
// (cpu-s/GiB: the daemon and its children; cat-cpu-s/GiB: the pipeline
// and this process), which, unlike the speeds, does not depend on what
// else the machine runs at the time.
func benchStream(b *testing.B, a *agent, req wire.ActionRequest, base string, size int64, check func(*wire.Result)) {
	s, err := a.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		b.Fatalf("submit: %+v, %v", s, err)
	}
	if _, err := a.cl.Approve(s.Approval.ID, 10000, time.Hour); err != nil { // the most uses a lease takes
		b.Fatal(err)
	}
	var took [3]cost // chain, pipeline read 128 KiB at a time, read 8 KiB at a time
	runs := [3]func() cost{
		func() cost {
			t0, cpu0 := time.Now(), a.d.CPU()
			s, err := a.cl.Submit(a.WS, req)
			if err != nil || s.Handle == "" {
				b.Fatalf("submit: %+v, %v", s, err)
			}
			r := a.End(s.Handle)
			c := cost{time.Since(t0), a.d.CPU() - cpu0}
			if r.Outcome != wire.Exited || r.Stdout.ObservedBytes != uint64(size) {
				b.Fatalf("%s, observed %d of %d bytes: %+v", r.Outcome, r.Stdout.ObservedBytes, size, r.Error)
			}
			if check != nil {
				check(r)
			}
			return c
		},
		func() cost { return pipeline(b, base, size, readBy(128<<10)) },
		func() cost {
			return pipeline(b, base, size, func(r io.Reader) (int64, error) { return io.Copy(io.Discard, r) })
		},
	}
	for i := 0; b.Loop(); i++ {
		for k := range runs {
			j := (i + k) % len(runs)
			c := runs[j]()
			took[j].wall += c.wall
			took[j].cpu += c.cpu
		}
	}
	chain, bare, bare8k := took[0].wall.Seconds(), took[1].wall.Seconds(), took[2].wall.Seconds()
	gib := float64(size) / (1 << 30) * float64(b.N)
	b.ReportMetric(1024*gib/chain, "MiB/s")
	b.ReportMetric(1024*gib/bare, "cat-MiB/s")
	b.ReportMetric(bare/chain, "x-cat")
	b.ReportMetric(1024*gib/bare8k, "cat8k-MiB/s")
	b.ReportMetric(bare8k/chain, "x-cat8k")
	b.ReportMetric(took[0].cpu.Seconds()/gib, "cpu-s/GiB")
	b.ReportMetric(took[1].cpu.Seconds()/gib, "cat-cpu-s/GiB")
}

// cost is what one run took: wall-clock time and CPU time.
type cost struct{ wall, cpu time.Duration }

// readBy returns a reader of a whole stream n bytes at a time.
func readBy(n int) func(io.Reader) (int64, error) {
	return func(r io.Reader) (int64, error) {
		buf := make([]byte, n)
		var got int64
		for {
			k, err := r.Read(buf)
			got += int64(k)
			if err == io.EOF {
				return got, nil
			} else if err != nil {
				return got, err
			}
		}
	}
}

// pipeline runs `sh -c base`, reads its stdout with read and requires
// size bytes. Its CPU time is the shell's with the children it reaped,
// and this process's own while it reads.
func pipeline(b *testing.B, base string, size int64, read func(io.Reader) (int64, error)) cost {
	t0, self0 := time.Now(), selfCPU(b)
	cmd := exec.Command("sh", "-c", base)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	got, err := read(out)
	if werr := cmd.Wait(); err != nil || werr != nil || got != size {
		b.Fatalf("%s: %d of %d bytes, %v %v", base, got, size, err, werr)
	}
	ps := cmd.ProcessState
	return cost{time.Since(t0), ps.UserTime() + ps.SystemTime() + selfCPU(b) - self0}
}

// selfCPU is the CPU time this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// macKey is the daemon's output HMAC key, so that a benchmark can check
// the raw digest of a receipt itself.
func macKey(b *testing.B, d *brokerd) []byte {
	k, err := receipt.LoadOrCreateKeys(filepath.Join(d.State, "keys"))
	if err != nil {
		b.Fatal(err)
	}
	return k.MACKey()
}

// textDigests is what the receipt of `cat` of a text log must say of its
// stdout, computed as the log was written.
type textDigests struct {
	rawHMAC, redactedSHA string
	redactedBytes        uint64
	lines                int
	hits                 map[string]uint64
}

// check requires r's receipt to carry exactly the digests and counts of
// the log's raw and redacted bytes.
func (w *textDigests) check(b *testing.B, d *brokerd, r *wire.Result) {
	ev := streamOf(b, d.Receipt(r.ReceiptID), receipt.Stdout)
	if ev.RawHMAC != w.rawHMAC || ev.RedactedSHA256 != w.redactedSHA || ev.RedactedBytes != w.redactedBytes {
		b.Fatalf("receipt stdout: raw HMAC %s, redacted SHA-256 %s of %d bytes; the log's are %s, %s of %d",
			ev.RawHMAC, ev.RedactedSHA256, ev.RedactedBytes, w.rawHMAC, w.redactedSHA, w.redactedBytes)
	}
	got := map[string]uint64{}
	for _, h := range ev.Redactions {
		got[h.Type] = h.Count
	}
	if len(got) != len(w.hits) {
		b.Fatalf("receipt redactions %v, want %v", ev.Redactions, w.hits)
	}
	for k, n := range w.hits {
		if got[k] != n {
			b.Fatalf("receipt redactions %v, want %v", ev.Redactions, w.hits)
		}
	}
}

// writeTextLog writes a size-byte text log (internal/logtext) to path and
// returns its raw MAC (the HMAC under key of its bytes' SHA-256, as
// command-receipt.v2 defines it) and the SHA-256 of its redaction, each
// computed from the lines as logtext made them, not by the receipt
// package.
func writeTextLog(b *testing.B, path string, size int64, key []byte) *textDigests {
	t0 := time.Now()
	raw, red := sha256.New(), sha256.New()
	w := &textDigests{hits: map[string]uint64{}}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := bufio.NewWriterSize(f, 1<<20)
	err = logtext.Write(buf, size, 19, func(line, redacted []byte, rule string) {
		raw.Write(line)
		red.Write(redacted)
		w.redactedBytes += uint64(len(redacted))
		w.lines++
		if rule != "" {
			w.hits[rule]++
		}
	})
	if err == nil {
		err = buf.Flush()
	}
	if err != nil {
		b.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(raw.Sum(nil))
	w.rawHMAC, w.redactedSHA = hex.EncodeToString(mac.Sum(nil)), hex.EncodeToString(red.Sum(nil))
	b.Logf("text log written and digested in %s", time.Since(t0).Round(time.Millisecond))
	return w
}
