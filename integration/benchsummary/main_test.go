package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// A captured run (testdata/bench.txt: the latency benchmarks and the
// 1 GiB stream of one run on a loaded machine, a flood whose figures
// came on a line of their own after output the benchmark wrote, and the
// egress benchmarks of another run; the Go floors beside CLIRunTrue and
// LaunchTrue/warm written in by hand) gives
// each goal's row from the figures of that run.
func TestSummaryOfCapturedRun(t *testing.T) {
	f, err := os.Open("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, failed, err := parse(f)
	if err != nil || failed != "" {
		t.Fatalf("parse: %v, failed %q", err, failed)
	}
	for _, c := range []struct {
		bench, metric string
		want          float64
	}{
		{"BenchmarkRunTrue/sealed-snapshot", "p50-x-bwrap", 1.922},
		{"BenchmarkRunTrue/in-place", "p50-x-bwrap", 2.070},
		{"BenchmarkRunTruePhases/back-to-back", "sum-of-p50-µs", 11497},
		{"BenchmarkLaunchTrue/warm", "os/exec-p50-µs", 1036},
		{"BenchmarkStdoutThroughput/text", "cat-cpu-s/GiB", 0.5748},
		{"BenchmarkStdoutFlood", "peak-rss-MiB", 40.12},
	} {
		if v, ok := res.value(c.bench, c.metric); !ok || v != c.want {
			t.Errorf("%s %s = %v (%v), want %v", c.bench, c.metric, v, ok, c.want)
		}
	}
	var out strings.Builder
	summarize(&out, res)
	for _, row := range []string{
		`RunTrue sealed p50 ÷ bwrap +1\.92 +≤ 1\.0 +no +p50-ms 14\.8, bwrap-p50-ms 7\.71`,
		`RunTrueSpaced p95 ÷ bwrap +4\.31 +≤ 1\.2 +no`,
		`CLIRunTrue p50 ÷ bwrap +3\.58 +≤ 1\.5 +no +p50-ms 27, bwrap-p50-ms 7\.55, go-start-p50-ms 9\.31, go-start-x-bwrap 1\.23`,
		`phases back-to-back, sum of p50 µs +11497 +≤ 2500 +no +submit-p50-µs 4852, spawn-p50-µs 1023, exec-p50-µs 3614, group-end-p50-µs 325, receipt-p50-µs 1683`,
		`LaunchTrue warm p50 ÷ os/exec +3\.31 +≤ 1\.5 +no +launcher-p50-µs 3430, os/exec-p50-µs 1036, go-exec-p50-µs 1203, go-exec-x-exec 1\.16`,
		`1 GiB text: speed ÷ cat's +0\.173 +≥ 0\.9 +no`,
		`1 GiB text: CPU per GiB ÷ cat's +5\.03 +≤ 1\.5 +no +cpu-s/GiB 2\.89, cat-cpu-s/GiB 0\.575`, // 2.890 / 0.5748
		`10 GiB flood: speed ÷ cat's +1\.15 +≥ 1\.0 +yes`,
		`10 GiB flood: peak RSS MiB +40\.1 +≤ 64 +yes`,
		`egress 1 GiB http: speed ÷ curl direct +0\.661 +≥ 0\.8 +no +MiB/s 1275, direct-MiB/s 1929`,
		`egress 1 GiB https: speed ÷ curl direct +0\.66 +≥ 0\.8 +no`,
		`egress connect: added µs +226 +≤ 500 +yes +proxy-µs/connect 243, direct-µs/connect 17\.4`,
		`3 of 16 goals met \(14 measured\)`,
	} {
		if !regexp.MustCompile(`(?m)^` + row).MatchString(out.String()) {
			t.Errorf("no row %q in\n%s", row, out.String())
		}
	}
}

// A failed benchmark fails the summary; a figure not reported is shown
// as not measured; repeated runs give their median.
func TestSummaryFailureAndMissing(t *testing.T) {
	in := "BenchmarkCLIRunTrue-2 \t 20 \t 1 ns/op \t 1.9 p50-x-bwrap\n" +
		"BenchmarkCLIRunTrue-2 \t 20 \t 1 ns/op \t 1.2 p50-x-bwrap\n" +
		"BenchmarkCLIRunTrue-2 \t 20 \t 1 ns/op \t 1.4 p50-x-bwrap\n" +
		"--- FAIL: BenchmarkRunTrue/sealed-snapshot-2\n    broker_bench_test.go:170: submit: refused\n" +
		"FAIL\nexit status 1\nFAIL\twarrant/integration\t3.1s\n"
	res, failed, err := parse(strings.NewReader(in))
	if err != nil || failed != "--- FAIL: BenchmarkRunTrue/sealed-snapshot-2" {
		t.Fatalf("parse: %v, failed %q", err, failed)
	}
	var out strings.Builder
	summarize(&out, res)
	for _, row := range []string{
		`CLIRunTrue p50 ÷ bwrap +1\.4 +≤ 1\.5 +yes`,
		`RunTrue sealed p50 ÷ bwrap +- +≤ 1\.0 +not measured`,
		`1 of 16 goals met \(1 measured\)`,
	} {
		if !regexp.MustCompile(`(?m)^` + row).MatchString(out.String()) {
			t.Errorf("no row %q in\n%s", row, out.String())
		}
	}
}
