package receipt

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"warrant/internal/logtext"
	"warrant/internal/profile"
	"warrant/wire"
)

// benchText is 16 MiB of ordinary build and log output without secrets:
// timestamps, paths, hyphenated and snake_case words, prose. It is made
// once and shared by every benchmark.
var benchText = sync.OnceValue(func() []byte {
	words := strings.Fields("the build of package internal/fsid finished in 1.2s with no errors " +
		"go-test run_all worker-3 INFO WARN request id=4711 path=/api/v1/items status=200 " +
		"Compiling src/main.rs a bearer of bad news Alice and Bob make_target x86-64 ALL_CAPS")
	rng := rand.New(rand.NewPCG(7, 7))
	var sb strings.Builder
	for sb.Len() < 16<<20 {
		fmt.Fprintf(&sb, "2026-01-02T03:04:%02d.%03dZ", rng.IntN(60), rng.IntN(1000))
		for i := 0; i < 12; i++ {
			sb.WriteByte(' ')
			sb.WriteString(words[rng.IntN(len(words))])
		}
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
})

// benchLog is 16 MiB of a log with credentials and near misses of them
// (internal/logtext): redaction has work to do.
var benchLog = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	logtext.Write(&b, 16<<20, 19, nil)
	return b.Bytes()
})

// benchInputs are the streams each benchmark records.
var benchInputs = []struct {
	name string
	data func() []byte
}{{"build", benchText}, {"log", benchLog}}

// shaBaseline measures plain SHA-256 over data, in MiB/s, in this run.
func shaBaseline(data []byte, rounds int) float64 {
	start := time.Now()
	for r := 0; r < rounds; r++ {
		h := sha256.New()
		for off := 0; off < len(data); off += MaxChunk {
			h.Write(data[off:min(len(data), off+MaxChunk)])
		}
		h.Sum(nil)
	}
	return float64(rounds*len(data)) / (1 << 20) / time.Since(start).Seconds()
}

// processCPU is the CPU time this process has used, on every thread: the
// hash workers' as well as the writer's.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report reports the speed against SHA-256's in this run, and the CPU
// time per GiB since cpu0 (processCPU before the loop), which unlike
// the speed does not depend on how many cores the workers found free.
func report(b *testing.B, data []byte, cpu0 time.Duration) {
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	gib := float64(b.N*len(data)) / (1 << 30)
	mibs := 1024 * gib / b.Elapsed().Seconds()
	sha := shaBaseline(data, max(1, b.N))
	b.ReportMetric(mibs, "MiB/s")
	b.ReportMetric(sha, "sha256-MiB/s")
	b.ReportMetric(mibs/sha, "x-sha256")
	b.ReportMetric(cpu.Seconds()/gib, "cpu-s/GiB")
}

func BenchmarkRedactStream(b *testing.B) {
	for _, in := range benchInputs {
		b.Run(in.name, func(b *testing.B) {
			rs := testRules(b)
			data := in.data()
			b.SetBytes(int64(len(data)))
			cpu0 := processCPU(b)
			for b.Loop() {
				r := rs.NewRedactor(func([]byte) {})
				for off := 0; off < len(data); off += MaxChunk {
					r.Write(data[off:min(len(data), off+MaxChunk)])
				}
				if _, err := r.Close(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, data, cpu0)
		})
	}
}

// BenchmarkStreamEvidence records each input with each profile's
// retention. The retained head and tail are kept and digested whatever
// the stream's length, so retention is a fixed cost per stream (digesting
// the tail at Close: 1 MiB for the long profile), here spread over 16 MiB.
func BenchmarkStreamEvidence(b *testing.B) {
	for _, in := range benchInputs {
		for _, p := range []wire.Profile{wire.ProfileShort, wire.ProfileStandard, wire.ProfileLong} {
			b.Run(fmt.Sprintf("%s/%s-retain-%dKiB", in.name, p, profile.Of(p).Retain>>10), func(b *testing.B) {
				benchEvidence(b, in.data(), profile.Of(p).Retain)
			})
		}
	}
}

func benchEvidence(b *testing.B, data []byte, retain int64) {
	rs := testRules(b)
	b.SetBytes(int64(len(data)))
	cpu0 := processCPU(b)
	for b.Loop() {
		r, _ := NewRecorder(RecorderConfig{Stream: Stdout, Retain: retain, Budget: 1 << 40, MACKey: testMACKey, Rules: rs})
		record(b, r, data, MaxChunk)
	}
	report(b, data, cpu0)
}

// BenchmarkRecordShortStreams is what the evidence of a short command's
// output costs: both streams' recorders made, "42\n" written to one,
// both closed. It is paid by every action, beside the launch.
func BenchmarkRecordShortStreams(b *testing.B) {
	rs := testRules(b)
	for b.Loop() {
		out, _ := NewRecorder(RecorderConfig{Stream: Stdout, Retain: 1 << 16, Budget: 1 << 20, MACKey: testMACKey, Rules: rs})
		errs, _ := NewRecorder(RecorderConfig{Stream: Stderr, Retain: 1 << 16, Budget: 1 << 20, MACKey: testMACKey, Rules: rs})
		record(b, out, []byte("42\n"), MaxChunk)
		record(b, errs, nil, MaxChunk)
	}
}

// BenchmarkSignReceipt is the cost of sealing one exited receipt with two
// streams: encode, in-toto statement, DSSE signature, chain and tree.
func BenchmarkSignReceipt(b *testing.B) {
	k := testKeys(b)
	c, _ := NewChain(k, nil)
	out, errs := testCaptured(b, Stdout, "42\n"), testCaptured(b, Stderr, "")
	for b.Loop() {
		if _, err := c.Seal(testReceipt("r", wire.Exited), out, errs); err != nil {
			b.Fatal(err)
		}
	}
}
