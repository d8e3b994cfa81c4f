package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestThinClientLinksOnlyARoundTrip: of warrant's packages, broker links
// exactly what a round trip to the daemon needs (wire, client, view, the
// CLI) and the card's words and tables, on Linux and on macOS; none of
// what brokerd holds: the broker itself, its journal, SQLite, the MCP
// SDK, and no receipt, policy, contract, goal or identity code
// (docs/architecture.md §3.2).
func TestThinClientLinksOnlyARoundTrip(t *testing.T) {
	want := []string{"warrant/broker/cli", "warrant/broker/client", "warrant/broker/internal/cardtext", "warrant/broker/view",
		"warrant/cmd/broker", "warrant/internal/closed", "warrant/internal/envpolicy", "warrant/internal/profile",
		"warrant/wire"}
	for goos, extra := range map[string][]string{
		"linux":  {"warrant/internal/retry"}, // the peer check's /proc read (broker/client/peer_linux.go)
		"darwin": nil,
	} {
		list := exec.Command("go", "list", "-deps", ".")
		list.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := list.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list -deps: %v", goos, err)
		}
		var ours []string
		for _, p := range strings.Fields(string(out)) {
			if p == "warrant" || strings.HasPrefix(p, "warrant/") {
				ours = append(ours, p)
			}
			if strings.HasPrefix(p, "modernc.org/sqlite") || strings.HasPrefix(p, "github.com/modelcontextprotocol/") {
				t.Errorf("GOOS=%s: broker links %s, which belongs in brokerd", goos, p)
			}
		}
		slices.Sort(ours)
		if want := slices.Sorted(slices.Values(append(slices.Clone(want), extra...))); !slices.Equal(ours, want) {
			t.Errorf("GOOS=%s: broker links warrant's\n%s\nnot exactly\n%s", goos, strings.Join(ours, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestThinClientInitIsCheap: what the thin client's own packages do
// before main, which every command pays (`broker --help` too), stays
// small: no package of warrant's allocates more than 8 KiB at init, nor
// all of them together more than 16 KiB (GODEBUG=inittrace=1 counts
// it): a table or a regular expression belongs in a sync.Once of the
// command that uses it.
func TestThinClientInitIsCheap(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "broker")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var trace strings.Builder
	cmd.Stderr = &trace
	if err := cmd.Run(); err != nil {
		t.Fatalf("broker --help: %v\n%s", err, trace.String())
	}
	const each, all = 8 << 10, 16 << 10
	total, seen := 0, 0
	for line := range strings.Lines(trace.String()) {
		// init PKG @T ms, C ms clock, N bytes, M allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" || !strings.HasPrefix(f[1], "warrant/") {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil || f[8] != "bytes," {
			t.Fatalf("unexpected inittrace line %q", line)
		}
		seen++
		total += n
		if n > each {
			t.Errorf("%s allocates %d bytes at init, over %d: build it when a command needs it", f[1], n, each)
		}
	}
	if seen == 0 {
		t.Fatalf("no init of warrant's packages in the trace:\n%s", trace.String())
	}
	if total > all {
		t.Errorf("warrant's packages allocate %d bytes at init in all, over %d", total, all)
	}
}
