//go:build linux

package integration

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// figureCalls is how many calls each side of TestMCPRunTrueFigures makes.
const figureCalls = 200

// TestMCPRunTrueFigures measures, in one run against one daemon and under
// one existing lease, tools/call run of /bin/true from the TypeScript
// client (each call's round trip as the client sees it: submit, launch,
// end, receipt sealed, result back) beside `broker run --json` of the
// same command (a process per run, as a shell would start it). It logs
// p50 and p95 of each and asserts nothing about time.
func TestMCPRunTrueFigures(t *testing.T) {
	d := shared(t)
	ws := d.newAgent(t).WS
	c := startTS(t, mcpServer(d.State, ws))
	args := map[string]any{"executable": "/bin/true"}
	a := c.action("run", args)
	if a.Approval == nil {
		t.Fatalf("the first run should ask for approval: %+v", a)
	}
	approve(t, d, a.Approval.RequestID, 10000) // the most uses a lease takes
	if a = c.action("wait", map[string]any{"approval_id": a.Approval.RequestID}); a.Result == nil || *a.Result.ExitCode != 0 {
		t.Fatalf("the approved run: %+v", a)
	}

	var bench struct {
		Ms      []float64      `json:"ms"`
		Stopped map[string]any `json:"stopped"`
	}
	c.do(map[string]any{"op": "bench", "name": "run", "arguments": args, "n": figureCalls}, &bench)
	if len(bench.Ms) != figureCalls || bench.Stopped != nil {
		t.Fatalf("the MCP calls stopped after %d: %+v", len(bench.Ms), bench.Stopped)
	}
	mcp := make([]time.Duration, len(bench.Ms))
	for i, ms := range bench.Ms {
		mcp[i] = time.Duration(ms * float64(time.Millisecond))
	}

	cli := make([]time.Duration, 0, figureCalls)
	for range figureCalls {
		ctx, cancel := context.WithTimeout(context.Background(), daemonSafety)
		cmd := exec.CommandContext(ctx, bins.broker, "run", "--state", d.State, "--workspace", ws, "--json", "--", "/bin/true")
		t0 := time.Now()
		out, err := cmd.Output()
		cli = append(cli, time.Since(t0))
		cancel()
		if err != nil {
			t.Fatalf("broker run under the same lease: %v\n%s", err, out)
		}
	}
	slices.Sort(mcp)
	slices.Sort(cli)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	t.Logf("tools/call run /bin/true, TypeScript client over stdio (n=%d): p50 %.2f ms, p95 %.2f ms", len(mcp), ms(quantile(mcp, 0.50)), ms(quantile(mcp, 0.95)))
	t.Logf("broker run --json -- /bin/true, a process per run (n=%d):      p50 %.2f ms, p95 %.2f ms", len(cli), ms(quantile(cli, 0.50)), ms(quantile(cli, 0.95)))
}
