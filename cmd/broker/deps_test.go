package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestThinClientLinksOnlyARoundTrip: broker links what a round trip to
// the daemon needs (wire, client, view) and none of what brokerd holds:
// the broker itself, its journal, SQLite, the MCP SDK.
func TestThinClientLinksOnlyARoundTrip(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"warrant/wire", "warrant/broker/client", "warrant/broker/view"} {
		if !slices.Contains(deps, want) {
			t.Errorf("broker does not link %s: is this list the client's?", want)
		}
	}
	for _, p := range deps {
		if p == "warrant/broker" || p == "warrant/broker/clid" || p == "warrant/broker/mcp" || p == "warrant/broker/runner" ||
			strings.HasPrefix(p, "warrant/broker/internal/journal") || strings.HasPrefix(p, "modernc.org/sqlite") ||
			strings.HasPrefix(p, "github.com/modelcontextprotocol/") {
			t.Errorf("broker links %s, which belongs in brokerd", p)
		}
	}
}
