//go:build linux

package integration

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestProbeBesideAnUnverifiedBroker: beside a daemon, `broker probe`
// runs no probe and shows the daemon's report, saying when it was made;
// its exit status is that report's: a daemon whose launcher cannot
// prove the sandbox (here /bin/true) has an unavailable report, and
// `broker probe && …` must not pass on it, in text or JSON.
func TestProbeBesideAnUnverifiedBroker(t *testing.T) {
	d := startBroker(t, "", "--launcher", "/bin/true")
	cmd, out, errb := brokerCmd("probe", "--state", d.State)
	cmd.Run()
	probed := regexp.MustCompile(`(?m)^probed: +(\S+) in`).FindStringSubmatch(out.String())
	if code := cmd.ProcessState.ExitCode(); code != 1 || probed == nil || strings.HasPrefix(out.String(), "capability: verified") {
		t.Fatalf("broker probe beside an unverified daemon: exit %d, want 1 and its report:\n%s\n%s", code, out, errb)
	}
	if !strings.Contains(errb.String(), "no probe ran: this is the report of the broker serving "+d.State+", made at "+probed[1]) {
		t.Fatalf("broker probe beside the daemon does not say whose report it shows and when it was made:\n%s", errb)
	}
	cmd, out, _ = brokerCmd("probe", "--json", "--state", d.State)
	cmd.Run()
	var c struct {
		State  string  `json:"state"`
		Probed *string `json:"probed"`
	}
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || cmd.ProcessState.ExitCode() != 1 || c.State == "verified" || c.Probed == nil || *c.Probed == "" {
		t.Fatalf("broker probe --json beside an unverified daemon: exit %d, %v:\n%s", cmd.ProcessState.ExitCode(), err, out)
	}
}

// TestProbeRefusesALauncherBesideABroker: `--launcher PATH` asks for a
// probe with that launcher, which cannot run beside a daemon: a usage
// error (exit 2) saying so, and no report that could pass for one.
func TestProbeRefusesALauncherBesideABroker(t *testing.T) {
	d := startBroker(t, "")
	cmd, out, errb := brokerCmd("probe", "--launcher", bins.launcher, "--state", d.State)
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 || out.Len() != 0 ||
		!strings.Contains(errb.String(), "--launcher") || !strings.Contains(errb.String(), "a broker is serving "+d.State) {
		t.Fatalf("broker probe --launcher beside a daemon: exit %d, want 2 and a usage error:\n%s\n%s", code, out, errb)
	}
}
