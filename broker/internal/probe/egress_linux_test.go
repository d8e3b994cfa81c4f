package probe

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
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

// TestProbeEgressFeature: where the egress prober never reached the
// proxy because the broker could not take its socket — a kernel without
// thread pidfds, or ptrace access refused, as the run's record of
// refusals names it — egress alone is unsupported, with that reason and
// a fix, and the host is verified for everything else. A leak (anything
// that arrived on a host object), a connection the proxy made, or a
// refusal the record does not name keeps the egress checks failing the
// host.
func TestProbeEgressFeature(t *testing.T) {
	proxy := netip.MustParseAddrPort("127.0.0.1:4000")
	refusedAt := func(object string, rule wire.DenialRule) *wire.Denials {
		return &wire.Denials{Sources: []string{"broker"}, Total: 2, Records: []wire.Denial{
			{Effect: wire.EffectConnect, Call: "connect", Object: object, Family: "AF_INET", Rule: rule, Source: wire.SourceBroker, Count: 2}}}
	}
	for _, c := range []struct {
		name    string
		denials *wire.Denials
		change  func(t *testing.T, h *egressHost, eg *wire.Egress)
		lack    string // in Unsupported; "" for a failure of the host
	}{
		{"no thread pidfds", refusedAt(proxy.String(), wire.RuleKernelUnsupported), nil, "no thread pidfds"},
		{"ptrace refused", refusedAt(proxy.String(), wire.RuleCallerUnreadable), nil, "ptrace access"},
		{"ptrace refused, the address unread", refusedAt("", wire.RuleCallerUnreadable), nil, "ptrace access"},
		{"no thread pidfds and a direct connection", refusedAt(proxy.String(), wire.RuleKernelUnsupported),
			func(t *testing.T, h *egressHost, eg *wire.Egress) { dialSend(t, h.plan.Upstream) }, ""},
		{"ptrace refused and a datagram", refusedAt(proxy.String(), wire.RuleCallerUnreadable),
			func(t *testing.T, h *egressHost, eg *wire.Egress) {
				c, err := net.Dial("udp4", fmt.Sprintf("127.0.0.1:%d", h.plan.UDP))
				must(t, err)
				defer c.Close()
				_, err = c.Write([]byte("x"))
				must(t, err)
			}, ""},
		{"no thread pidfds, but the proxy connected", refusedAt(proxy.String(), wire.RuleKernelUnsupported),
			func(t *testing.T, h *egressHost, eg *wire.Egress) {
				eg.Total, eg.Connections = 1, []wire.EgressConnection{{Host: "127.0.0.1", Port: uint16(h.plan.Upstream), Allowed: true}}
			}, ""},
		{"no thread pidfds, and no lines", refusedAt(proxy.String(), wire.RuleKernelUnsupported), nil, ""}, // the probe cannot tell
		{"a refusal of another address", refusedAt("127.0.0.1:9", wire.RuleKernelUnsupported), nil, ""},
		{"another rule", refusedAt(proxy.String(), wire.RuleNotThroughProxy), nil, ""},
		{"nothing recorded", nil, nil, ""},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			h, err := newEgressHost()
			must(t, err)
			defer h.close()
			eg := &wire.Egress{Granted: []string{h.up.entry()}}
			if c.change != nil {
				c.change(t, h, eg)
			}
			// The prober reached nothing: every attempt failed, and it
			// said so (but where it printed nothing).
			var out strings.Builder
			for _, check := range probeprog.EgressChecks {
				if !strings.Contains(c.name, "no lines") {
					fmt.Fprintf(&out, "egress %s failed errno EACCES\n", check)
				}
			}
			run := lifecycle.Result{Egress: eg, Denials: c.denials, Outcome: wire.Exited}
			checks := h.judge(run, out.String())
			f := egressFeature(checks, run, proxy, ptraceFact())
			if f.Available || len(f.Checks) != len(probeprog.EgressChecks) {
				t.Fatalf("feature %+v", f)
			}
			if c.lack == "" && (f.Unsupported != "" || f.Fix != "") || c.lack != "" && (!strings.Contains(f.Unsupported, c.lack) || f.Fix == "") {
				t.Fatalf("unsupported %q, fix %q; want %q", f.Unsupported, f.Fix, c.lack)
			}
			r := &Report{Checks: append([]Check{{Name: "launch", From: "host", Binding: "in-place", Pass: true}}, checks...),
				Features: []Feature{f}}
			r.Conclude()
			why, _ := r.Unoffered(FeatureEgress)
			switch {
			case c.lack != "" && (r.State != wire.Verified || len(r.Failed) != 0 || !strings.Contains(why, c.lack)):
				t.Fatalf("state %s, failed %v, egress %q: want verified, egress unsupported", r.State, r.Failed, why)
			case c.lack == "" && (r.State != wire.Unavailable || !slices.Contains(r.Failed, "egress_proxy/egress@in-place")):
				t.Fatalf("state %s, failed %v: want unavailable, the egress checks failed", r.State, r.Failed)
			}
		})
	}
}

// TestProbeEgressOffered: egress is offered only by a verified report
// that lists it available; a verified report without it (made before
// its checks) does not offer it.
func TestProbeEgressOffered(t *testing.T) {
	on := Feature{Name: FeatureEgress, Available: true}
	off := Feature{Name: FeatureEgress, Unsupported: "no thread pidfds"}
	for _, c := range []struct {
		r     Report
		offer bool
	}{
		{Report{State: wire.Verified, Features: []Feature{on}}, true},
		{Report{State: wire.Verified, Features: []Feature{off}}, false},
		{Report{State: wire.Verified}, false},
		{Report{State: wire.Unavailable, Features: []Feature{on}}, false},
	} {
		if why, _ := c.r.Unoffered(FeatureEgress); (why == "") != c.offer {
			t.Errorf("%s report with %+v: offered %v, want %v", c.r.State, c.r.Features, why == "", c.offer)
		}
	}
}
