package probe

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warrant/broker/lifecycle"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestProbeJudgesOnTheHost: a target that claims every forbidden attempt
// failed does not pass when the host objects say otherwise.
func TestProbeJudgesOnTheHost(t *testing.T) {
	h, err := newProbeHost(filepath.Join(t.TempDir(), "probe"))
	must(t, err)
	defer h.close()
	// What an escaped target would have done, claimed as failures.
	must(t, os.WriteFile(filepath.Join(h.outside, "written-by-grandchild"), nil, 0o600))
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", h.plan.TCPPort))
	must(t, err)
	defer c.Close()
	var out strings.Builder
	for _, who := range []string{"target", "grandchild"} {
		for _, check := range []string{"write_outside", "tcp_connect", "read_secret"} {
			out.WriteString(who + " " + check + " failed errno EACCES\n")
		}
	}
	checks := h.judge(lifecycle.Result{}, out.String())
	verdict := map[string]Check{}
	for _, c := range checks {
		verdict[c.Name+"/"+c.From] = c
	}
	for name, pass := range map[string]bool{"write_outside/target": true, "write_outside/grandchild": false,
		"tcp_connect/target": false, "read_secret/target": true, "signal/target": false, "launch/host": false} {
		if c := verdict[name]; c.Pass != pass {
			t.Errorf("%s: pass %v, want %v (%s: %s)", name, c.Pass, pass, c.Observed, c.Evidence)
		}
	}
	if c := verdict["signal/target"]; c.Observed != "not attempted" {
		t.Errorf("a missing line is %q", c.Observed)
	}
}
