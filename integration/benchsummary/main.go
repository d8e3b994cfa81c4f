// Command benchsummary reads the output of `go test -bench` (the files
// named, or standard input) and prints one table of the chain's goals:
// each ratio a benchmark reports against a baseline measured in the same
// run, the goal it is held to, and whether it is met. `make bench` ends
// with it.
//
// It exits 1 when the output records a failure (a FAIL line or a panic),
// so that make fails although each go test ran into tee; a goal not met,
// or a figure not measured (no bubblewrap to compare with), does not.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// goal is one row: a benchmark's metric (or the ratio of two of its
// metrics) held to a limit.
type goal struct {
	figure string
	bench  string // without the -GOMAXPROCS suffix
	metric string
	over   string   // if set, the row is metric/over
	atMost bool     // the goal is value <= limit; else value >= limit
	limit  float64  //
	from   []string // the metrics it is computed from, shown beside it
}

// goals are the chain's goals (issue 36), each shown beside the floor
// its benchmark measures in the same run where there is one: the start of
// the smallest Go program against bwrap (go-start-x-bwrap: a Go client
// meets its goal beside a chain that meets its own only where this is at
// most 0.5), and a warm Go program executing /bin/true against os/exec
// (what being a Go launcher costs before any check or confinement). Then
// the denial observers'
// (issue 35: a build with them on at most 2% slower than with them off).
// The flood's are "keep": no slower than cat, and the peak RSS
// TestBrokerStdoutFlood asserts. Then egress leases' (issue 34): a 1 GiB
// download through the proxy at 0.8 of curl's direct speed or better
// (shown beside a bare relay's ratio in the same run: the floor of any
// relay on the host), and what a connection through it adds, held well
// under one round trip to a registry (500 µs).
var goals = []goal{
	{"RunTrue sealed p50 ÷ bwrap", "BenchmarkRunTrue/sealed-snapshot", "p50-x-bwrap", "", true, 1.0, []string{"p50-ms", "bwrap-p50-ms"}},
	{"RunTrue sealed p95 ÷ bwrap", "BenchmarkRunTrue/sealed-snapshot", "p95-x-bwrap", "", true, 1.2, []string{"p95-ms", "bwrap-p95-ms"}},
	{"RunTrueSpaced p50 ÷ bwrap", "BenchmarkRunTrueSpaced", "p50-x-bwrap", "", true, 1.0, []string{"p50-ms", "bwrap-p50-ms"}},
	{"RunTrueSpaced p95 ÷ bwrap", "BenchmarkRunTrueSpaced", "p95-x-bwrap", "", true, 1.2, []string{"p95-ms", "bwrap-p95-ms"}},
	{"CLIRunTrue p50 ÷ bwrap", "BenchmarkCLIRunTrue", "p50-x-bwrap", "", true, 1.5, []string{"p50-ms", "bwrap-p50-ms", "go-start-p50-ms", "go-start-x-bwrap"}},
	{"phases back-to-back, sum of p50 µs", "BenchmarkRunTruePhases/back-to-back", "sum-of-p50-µs", "", true, 2500,
		[]string{"submit-p50-µs", "spawn-p50-µs", "exec-p50-µs", "group-end-p50-µs", "receipt-p50-µs"}},
	{"LaunchTrue warm p50 ÷ os/exec", "BenchmarkLaunchTrue/warm", "ratio-p50", "", true, 1.5, []string{"launcher-p50-µs", "os/exec-p50-µs", "go-exec-p50-µs", "go-exec-x-exec"}},
	{"1 GiB text: speed ÷ cat's", "BenchmarkStdoutThroughput/text", "x-cat", "", false, 0.9, []string{"MiB/s", "cat-MiB/s"}},
	{"1 GiB text: CPU per GiB ÷ cat's", "BenchmarkStdoutThroughput/text", "cpu-s/GiB", "cat-cpu-s/GiB", true, 1.5, []string{"cpu-s/GiB", "cat-cpu-s/GiB"}},
	{"10 GiB flood: speed ÷ cat's", "BenchmarkStdoutFlood", "x-cat", "", false, 1.0, []string{"MiB/s", "cat-MiB/s"}},
	{"10 GiB flood: peak RSS MiB", "BenchmarkStdoutFlood", "peak-rss-MiB", "", true, 64, nil},
	{"go build, observers on ÷ off", "BenchmarkDenialObservers/go-build", "on-x-off", "", true, 1.02, []string{"on-p50-ms", "off-p50-ms"}},
	{"npm test, observers on ÷ off", "BenchmarkDenialObservers/npm-test", "on-x-off", "", true, 1.02, []string{"on-p50-ms", "off-p50-ms"}},
	{"egress 1 GiB http: speed ÷ curl direct", "BenchmarkEgressDownload/http", "x-direct", "", false, 0.8, []string{"MiB/s", "direct-MiB/s", "relay-x-direct"}},
	{"egress 1 GiB https: speed ÷ curl direct", "BenchmarkEgressDownload/https", "x-direct", "", false, 0.8, []string{"MiB/s", "direct-MiB/s", "relay-x-direct"}},
	{"egress connect: added µs", "BenchmarkEgressConnect", "added-µs/connect", "", true, 500, []string{"proxy-µs/connect", "direct-µs/connect"}},
}

func main() {
	var in []io.Reader
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchsummary:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = append(in, f)
	}
	if len(in) == 0 {
		in = append(in, os.Stdin)
	}
	res, failed, err := parse(io.MultiReader(in...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsummary:", err)
		os.Exit(2)
	}
	summarize(os.Stdout, res)
	if failed != "" {
		fmt.Fprintf(os.Stderr, "benchsummary: the benchmarks failed (%s)\n", failed)
		os.Exit(1)
	}
}

// results maps a benchmark's name to each run's metrics by unit.
type results map[string][]map[string]float64

var (
	suffix  = regexp.MustCompile(`-\d+$`)
	numbers = regexp.MustCompile(`^\s*\d+\s+\S+ \S+`) // iterations, then value unit pairs
	failure = regexp.MustCompile(`^(--- FAIL|FAIL|panic:)`)
)

// parse reads benchmark result lines. A benchmark that writes while it
// runs splits its line: the name, its output, then the figures on a line
// of their own; those are taken as the last name's.
func parse(r io.Reader) (results, string, error) {
	res := results{}
	failed, name := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if failure.MatchString(line) && failed == "" {
			failed = strings.TrimSpace(line)
		}
		rest := line
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "Benchmark") {
			name = suffix.ReplaceAllString(f[0], "")
			rest = strings.TrimPrefix(strings.TrimSpace(line), f[0])
		} else if !numbers.MatchString(line) {
			continue
		}
		f := strings.Fields(rest)
		if name == "" || len(f) < 3 || len(f)%2 != 1 {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue
		}
		m := map[string]float64{}
		for i := 1; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, "", fmt.Errorf("%s: metric %q: %v", name, f[i+1], err)
			}
			m[f[i+1]] = v
		}
		res[name] = append(res[name], m)
	}
	return res, failed, sc.Err()
}

// value is the median over runs of the benchmark's metric, and whether
// any run reported it.
func (res results) value(bench, metric string) (float64, bool) {
	var vs []float64
	for _, m := range res[bench] {
		if v, ok := m[metric]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	return vs[len(vs)/2], true
}

// summarize prints the table and how many goals were met.
func summarize(w io.Writer, res results) {
	fmt.Fprintln(w, "\nThe chain's goals, each against its baseline in this run:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tnow\tgoal\tmet\tfrom")
	met, measured := 0, 0
	for _, g := range goals {
		v, ok := res.value(g.bench, g.metric)
		if d, dok := res.value(g.bench, g.over); ok && g.over != "" {
			v, ok = v/d, dok && d != 0
		}
		cmp := "≥"
		if g.atMost {
			cmp = "≤"
		}
		if !ok {
			fmt.Fprintf(tw, "%s\t-\t%s %s\tnot measured\t%s\n", g.figure, cmp, limit(g.limit), g.bench)
			continue
		}
		measured++
		yes := "no"
		if g.atMost && v <= g.limit || !g.atMost && v >= g.limit {
			yes = "yes"
			met++
		}
		var from []string
		for _, m := range g.from {
			if x, ok := res.value(g.bench, m); ok {
				from = append(from, m+" "+num(x))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s\t%s\t%s\n", g.figure, num(v), cmp, limit(g.limit), yes, strings.Join(from, ", "))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d goals met (%d measured)\n", met, len(goals), measured)
}

// limit prints a goal's limit: 1.0, 1.02, 1.5, 64, 2500.
func limit(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', max(1, len(strconv.FormatFloat(v, 'f', -1, 64))-2), 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// num prints v with three significant digits, or as an integer from 1000.
func num(v float64) string {
	if v >= 1000 || v <= -1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
