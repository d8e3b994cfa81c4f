package broker_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"warrant/broker/internal/probe"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// TestProbeEgressUnsupported runs the real probe, `broker run` and
// `broker status` with the real launcher on a host made to lack one
// mechanism egress leases need (faultwrap's seccomp filter on brokerd
// and everything it starts): pidfd_open with PIDFD_THREAD is EINVAL as
// on Linux 6.7 and 6.8, or pidfd_getfd is EPERM as where ptrace access is
// refused. The host is verified, egress unsupported with the probe's
// reason; a command without egress runs; one with an egress grant is
// refused with SANDBOX_UNAVAILABLE and that reason, and does not run.
// Without a fault the same probe offers egress.
func TestProbeEgressUnsupported(t *testing.T) {
	skipWithoutSandbox(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("skip: faultwrap's filter is written for amd64")
	}
	dir := t.TempDir()
	bin, launcher, wrap := filepath.Join(dir, "broker"), filepath.Join(dir, "launcher"), filepath.Join(dir, "faultwrap")
	for out, pkg := range map[string]string{bin: "warrant/cmd/brokerd", launcher: "warrant/cmd/launcher",
		wrap: "warrant/broker/internal/probe/testdata/faultwrap"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	for _, c := range []struct {
		fault string
		lack  string // in the feature's reason; "" when egress is offered
	}{
		{"none", ""},
		{"pidfd-thread", "no thread pidfds"},
		{"pidfd-getfd", "ptrace access"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			broker := func(args ...string) (string, string, int) {
				t.Helper()
				cmd := exec.Command(wrap, append([]string{c.fault, bin, args[0], "--state", state}, args[1:]...)...)
				cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+launcher)
				var out, errb strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errb
				var ee *exec.ExitError
				if err := cmd.Run(); err != nil && !errors.As(err, &ee) {
					t.Fatal(err)
				}
				return out.String(), errb.String(), cmd.ProcessState.ExitCode()
			}
			out, errOut, code := broker("probe", "--json")
			r := probeReport(t, out)
			if code != 0 || r.State != wire.Verified || len(r.Failed) != 0 {
				t.Fatalf("probe: exit %d, state %s, reason %q, failed %v\n%s", code, r.State, r.Reason, r.Failed, errOut)
			}
			i := slices.IndexFunc(r.Features, func(f probe.Feature) bool { return f.Name == probe.FeatureEgress })
			if i < 0 {
				t.Fatalf("the report lists no egress feature: %+v", r.Features)
			}
			f := r.Features[i]
			var proxy probe.Check
			for _, ch := range r.Checks {
				if ch.Name == probeprog.EgressProxy {
					proxy = ch
				}
			}
			switch {
			case c.lack == "" && (!f.Available || f.Unsupported != "" || !proxy.Pass):
				t.Fatalf("egress without a fault: %+v; %s: %s", f, proxy.Name, proxy.Evidence)
			case c.lack != "" && (f.Available || !strings.Contains(f.Unsupported, c.lack) || f.Fix == "" || proxy.Pass):
				t.Fatalf("egress under %s: %+v; %s: pass %v, %s", c.fault, f, proxy.Name, proxy.Pass, proxy.Evidence)
			}
			if c.lack == "" {
				return
			}
			t.Logf("egress under %s: %s; fix: %s", c.fault, f.Unsupported, f.Fix)

			status, _, _ := broker("status")
			if !strings.Contains(status, "egress:     NOT AVAILABLE on this host: ") || !strings.Contains(status, c.lack) ||
				!strings.Contains(status, "  off     "+probeprog.EgressProxy) {
				t.Errorf("broker status does not say egress is off:\n%s", status)
			}
			ws := t.TempDir()
			if _, errOut, code := broker("run", "--approve", "--workspace", ws, "--", "/bin/sh", "-c", "echo ran > plain"); code != 0 {
				t.Fatalf("a run without egress: exit %d\n%s", code, errOut)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "plain")); err != nil || string(b) != "ran\n" {
				t.Fatalf("host: the run without egress wrote %q (%v)", b, err)
			}
			_, errOut, code = broker("run", "--approve", "--workspace", ws, "--egress", "127.0.0.1:4873", "--",
				"/bin/sh", "-c", "echo ran > egress")
			if code != 125 || !strings.Contains(errOut, "SANDBOX_UNAVAILABLE") || !strings.Contains(errOut, "egress leases are not available on this host") ||
				!strings.Contains(errOut, c.lack) {
				t.Fatalf("a run with egress: exit %d\n%s", code, errOut)
			}
			if _, err := os.Stat(filepath.Join(ws, "egress")); !os.IsNotExist(err) {
				t.Fatalf("the refused run ran: %v", err)
			}
		})
	}
}
