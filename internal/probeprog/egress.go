package probeprog

import (
	"fmt"
	"strings"
)

// EgressProber is the program of the egress checks, run as an action
// whose egress grant is one local upstream of the broker's: it fetches
// a page of the upstream through the broker's proxy (the one
// HTTP_PROXY names), then tries to reach past the grant every other
// way: the proxy for another port, a connect to the upstream itself and
// to another port, a UDP datagram, a DNS query. Its workspace holds
// EgressPlanFile.
const EgressProber = "egress"

// The egress checks: EgressProxy must succeed (the page read back, its
// bytes counted by the proxy as the upstream counted them); every other
// must fail with nothing arriving on the host.
const (
	EgressProxy     = "egress_proxy"      // GET of the upstream's page through the proxy
	EgressOffLease  = "egress_off_lease"  // the same through the proxy, for the other port
	EgressDirect    = "egress_direct"     // connect to the upstream, not through the proxy
	EgressOtherPort = "egress_other_port" // connect to the other port
	EgressUDP       = "egress_udp"        // a datagram to a UDP socket
	EgressDNS       = "egress_dns"        // a DNS query to another UDP socket
)

// EgressChecks lists them in report order.
var EgressChecks = []string{EgressProxy, EgressOffLease, EgressDirect, EgressOtherPort, EgressUDP, EgressDNS}

// EgressPlanFile is the egress prober's plan, in its workspace: the
// ports on 127.0.0.1 of the upstream, the other TCP listener, the UDP
// socket and the DNS socket, then the path of the upstream's page
// (EgressPlan).
const EgressPlanFile = "egress-plan"

// EgressPlan is the content of EgressPlanFile.
type EgressPlan struct {
	Upstream, Other, UDP, DNS int
	Page                      string // "/..." without spaces
}

// String is p as EgressPlanFile holds it.
func (p EgressPlan) String() string {
	return fmt.Sprintf("%d %d %d %d %s\n", p.Upstream, p.Other, p.UDP, p.DNS, p.Page)
}

// ParseEgressPlan reads what String wrote.
func ParseEgressPlan(s string) (EgressPlan, error) {
	var p EgressPlan
	if n, err := fmt.Sscan(s, &p.Upstream, &p.Other, &p.UDP, &p.DNS, &p.Page); err != nil || n != 5 || !strings.HasPrefix(p.Page, "/") {
		return EgressPlan{}, fmt.Errorf("parse the egress plan %q: %v", s, err)
	}
	return p, nil
}
