package probe

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"warrant/broker/lifecycle"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// TestProbeJudgesEgressOnTheHost: the egress checks pass for an honest
// run (the page fetched through the proxy, its bytes counted as the
// upstream counted them, everything else refused with nothing arriving)
// and fail, whatever the prober's lines claim, when the host objects or
// the proxy's record say otherwise.
func TestProbeJudgesEgressOnTheHost(t *testing.T) {
	honest := func(h *egressHost) string {
		var out strings.Builder
		fmt.Fprintf(&out, "egress %s done %s\n", probeprog.EgressProxy, h.content)
		for _, c := range probeprog.EgressChecks[1:] {
			fmt.Fprintf(&out, "egress %s failed errno EACCES\n", c)
		}
		return out.String()
	}
	for _, c := range []struct {
		name   string
		change func(t *testing.T, h *egressHost, eg *wire.Egress) string // the prober's output
		fail   []string
	}{
		{"honest", func(t *testing.T, h *egressHost, eg *wire.Egress) string { return honest(h) }, nil},
		{"a byte not counted", func(t *testing.T, h *egressHost, eg *wire.Egress) string {
			eg.Connections[0].Down--
			return honest(h)
		}, []string{probeprog.EgressProxy}},
		{"no record", func(t *testing.T, h *egressHost, eg *wire.Egress) string {
			*eg = wire.Egress{}
			return honest(h)
		}, []string{probeprog.EgressProxy, probeprog.EgressOffLease, probeprog.EgressDirect}},
		{"a direct connection to the upstream", func(t *testing.T, h *egressHost, eg *wire.Egress) string {
			dialSend(t, h.plan.Upstream)
			return honest(h)
		}, []string{probeprog.EgressProxy, probeprog.EgressDirect}},
		{"a connection to the other port", func(t *testing.T, h *egressHost, eg *wire.Egress) string {
			dialSend(t, h.plan.Other)
			return honest(h)
		}, []string{probeprog.EgressOffLease, probeprog.EgressOtherPort}},
		{"a DNS query arrived", func(t *testing.T, h *egressHost, eg *wire.Egress) string {
			c, err := net.Dial("udp4", fmt.Sprintf("127.0.0.1:%d", h.plan.DNS))
			must(t, err)
			defer c.Close()
			_, err = c.Write([]byte("query"))
			must(t, err)
			return honest(h)
		}, []string{probeprog.EgressDNS}},
		{"no lines", func(t *testing.T, h *egressHost, eg *wire.Egress) string { return "" }, probeprog.EgressChecks},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			h, err := newEgressHost()
			must(t, err)
			defer h.close()
			// What the proxy does for the prober: one GET of the page,
			// recorded with the bytes it moved, and a refusal.
			conn, err := net.Dial("tcp4", h.up.entry())
			must(t, err)
			req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", h.page, h.up.entry())
			_, err = io.WriteString(conn, req)
			must(t, err)
			resp, err := io.ReadAll(conn)
			must(t, err)
			conn.Close()
			eg := &wire.Egress{Granted: []string{h.up.entry()}, Total: 2, Refused: 1, Connections: []wire.EgressConnection{
				{Host: "127.0.0.1", Port: uint16(h.plan.Upstream), Address: "127.0.0.1", Up: uint64(len(req)), Down: uint64(len(resp)), Allowed: true},
				{Host: "127.0.0.1", Port: uint16(h.plan.Other), Reason: "not on the lease"},
			}}
			out := c.change(t, h, eg)
			var failed []string
			for _, ch := range h.judge(lifecycle.Result{Egress: eg, Outcome: wire.Exited}, out) {
				if !ch.Pass {
					failed = append(failed, ch.Name)
				}
			}
			if strings.Join(failed, " ") != strings.Join(c.fail, " ") {
				t.Errorf("failed %v, want %v", failed, c.fail)
			}
		})
	}
}

// dialSend connects to 127.0.0.1:port and sends a byte.
func dialSend(t *testing.T, port int) {
	t.Helper()
	c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	must(t, err)
	defer c.Close()
	_, err = c.Write([]byte("x"))
	must(t, err)
}
