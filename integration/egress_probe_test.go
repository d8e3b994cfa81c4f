//go:build linux

package integration

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"warrant/internal/probeprog"
)

// probeCheck is one check of the capability report, as `broker status
// --json` shows it.
type probeCheck struct {
	Name     string `json:"name"`
	From     string `json:"from"`
	Allowed  bool   `json:"allowed"`
	Observed string `json:"observed"`
	Pass     bool   `json:"pass"`
	Evidence string `json:"evidence"`
}

func TestEgressProbeChecks(t *testing.T) {
	d := startBroker(t, "")
	out, code := d.CLI("status", "--json")
	egressProbeChecks(t, []byte(out), code)
}

func TestEgressProbeChecksAsUser(t *testing.T) {
	u := asNobody(t)
	u.run("/bin/true") // the embedded broker probes at its first open
	out, code := u.cli("status", "--json")
	egressProbeChecks(t, out, code)
}

// egressProbeChecks: a verified capability report holds every egress
// check of the probe (issue 34 point 6), each passed: the prober fetched
// the local upstream's page through the proxy, and the proxy counted
// that connection's bytes as the upstream did; the proxy refused
// another port; the direct connects, the datagram and the DNS query
// failed with nothing arriving. Each row's evidence says so, and the
// report's features offer egress.
func egressProbeChecks(t *testing.T, status []byte, code int) {
	var r struct {
		State    string       `json:"state"`
		Checks   []probeCheck `json:"checks"`
		Features []struct {
			Name        string   `json:"name"`
			Available   bool     `json:"available"`
			Unsupported *string  `json:"unsupported"`
			Checks      []string `json:"checks"`
		} `json:"features"`
	}
	if err := json.Unmarshal(status, &r); err != nil || code != 0 {
		t.Fatalf("broker status --json: exit %d, %v\n%s", code, err, status)
	}
	evidence := map[string]*regexp.Regexp{
		probeprog.EgressProxy:     regexp.MustCompile(`served \["/warrant-probe-[0-9a-f]+" \((\d+) bytes in, (\d+) out\)\]; the proxy's record: 2 connection\(s\), 1 refused; to 127\.0\.0\.1:\d+: \[allowed through 127\.0\.0\.1\S*, (\d+) bytes up, (\d+) down\]`),
		probeprog.EgressOffLease:  regexp.MustCompile(`the other listener received nothing; the proxy's record of 127\.0\.0\.1:\d+: refused: `),
		probeprog.EgressDirect:    regexp.MustCompile(`accepted 1 connection\(s\), and 0 more were queued, against the 1 the proxy made`),
		probeprog.EgressOtherPort: regexp.MustCompile(`the other listener received nothing`),
		probeprog.EgressUDP:       regexp.MustCompile(`the UDP socket received nothing`),
		probeprog.EgressDNS:       regexp.MustCompile(`the DNS socket received nothing`),
	}
	var seen []string
	for _, c := range r.Checks {
		if c.From != probeprog.EgressProber {
			continue
		}
		seen = append(seen, c.Name)
		want := "failed"
		if c.Name == probeprog.EgressProxy {
			want = "succeeded"
		}
		m := evidence[c.Name].FindStringSubmatch(c.Evidence)
		if !c.Pass || c.Observed != want || c.Allowed != (want == "succeeded") || m == nil {
			t.Errorf("check %s: pass %v, observed %s (want %s); evidence: %s", c.Name, c.Pass, c.Observed, want, c.Evidence)
			continue
		}
		if c.Name == probeprog.EgressProxy && (m[1] != m[3] || m[2] != m[4]) {
			t.Errorf("check %s: the upstream's counts and the proxy's differ: %s", c.Name, c.Evidence)
		}
	}
	if !slices.Equal(seen, probeprog.EgressChecks) {
		t.Errorf("the report's egress checks are %v, want %v", seen, probeprog.EgressChecks)
	}
	if r.State != "verified" {
		t.Errorf("the capability state is %s", r.State)
	}
	// This host offers egress: the feature lists the checks above.
	if len(r.Features) != 1 || r.Features[0].Name != "egress" || !r.Features[0].Available || r.Features[0].Unsupported != nil ||
		len(r.Features[0].Checks) != len(probeprog.EgressChecks) {
		t.Errorf("features %+v: want egress available, by its %d checks", r.Features, len(probeprog.EgressChecks))
	}
}
