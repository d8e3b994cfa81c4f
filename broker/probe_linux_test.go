package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/broker"
	"warrant/broker/internal/probe"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// The probe tests run the real `broker probe` and `broker run` binaries
// with the real launcher, as root on this machine, and one broker built
// with -tags warrant_insecure_probe_test, whose default policy
// deliberately lets actions read the state directory.

// buildProbeBins builds brokerd, the insecure brokerd and the launcher.
func buildProbeBins(t *testing.T) (brokerBin, insecureBin, launcherBin string) {
	t.Helper()
	dir := t.TempDir()
	brokerBin, insecureBin, launcherBin = filepath.Join(dir, "broker"), filepath.Join(dir, "broker-insecure"), filepath.Join(dir, "launcher")
	for _, b := range [][]string{
		{"-o", brokerBin, "warrant/cmd/brokerd"},
		{"-tags", "warrant_insecure_probe_test", "-o", insecureBin, "warrant/cmd/brokerd"},
		{"-o", launcherBin, "warrant/cmd/launcher"},
	} {
		cmd := exec.Command("go", append([]string{"build"}, b...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", b, err, out)
		}
	}
	return brokerBin, insecureBin, launcherBin
}

// brokerCmd runs bin with args (a command first) against state and returns its stdout, its
// stderr and its exit status.
func brokerCmd(t *testing.T, bin, launcher, state string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{args[0], "--state", state}, args[1:]...)...)
	cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+launcher)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func probeReport(t *testing.T, out string) *probe.Report {
	t.Helper()
	r := &probe.Report{}
	if err := json.Unmarshal([]byte(out), r); err != nil {
		t.Fatalf("broker probe --json: %v\n%s", err, out)
	}
	return r
}

// wantChecks is every check of the battery, as "name/from@binding",
// under each binding the broker offers, then the check of each resource
// limit the report says this host enforces, then the egress checks.
func wantChecks(limits []probe.Limit) (want []string) {
	defer func() {
		for _, l := range limits {
			if l.EnforcedBy != "none" {
				want = append(want, l.Name+"_limit/"+l.Name+"@"+probe.Bindings[0].String())
			}
		}
		for _, c := range probeprog.EgressChecks {
			want = append(want, c+"/"+probeprog.EgressProber+"@"+probe.Bindings[0].String())
		}
	}()
	for _, b := range probe.Bindings {
		at := "@" + b.String()
		want = append(want, "launch/host"+at, probeprog.ReadInput+"/target"+at, probeprog.WriteWorkspace+"/target"+at,
			probeprog.RunRuntime+"/target"+at, probeprog.MetadataWorkspace+"/target"+at, probeprog.SpawnChild+"/target"+at,
			probeprog.SpawnGrandchild+"/child"+at)
		for _, who := range probeprog.Attackers {
			for _, c := range probeprog.Forbidden {
				want = append(want, c+"/"+who+at)
			}
			want = append(want, probeprog.ProtectedWrite+"/"+who+at) // a root broker binds it read-only
		}
		want = append(want, probe.RecordSocket+"/host"+at, probe.RecordMetadata+"/host"+at)
	}
	return want
}

func skipWithoutSandbox(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("skip: the probe's expectations are written for this root test machine")
	}
	if abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION); errno != 0 || abi < 4 {
		t.Skipf("skip: Landlock ABI 4 is not available (abi %d, %v)", abi, errno)
	}
}

// TestProbeVerifiesThisHost: the probe passes here, its report lists every
// check with its evidence and binding, it is stored, and the next start
// reuses it instead of probing again.
func TestProbeVerifiesThisHost(t *testing.T) {
	skipWithoutSandbox(t)
	bin, _, launcher := buildProbeBins(t)
	state := filepath.Join(t.TempDir(), "state")
	out, errOut, code := brokerCmd(t, bin, launcher, state, "probe", "--json")
	r := probeReport(t, out)
	if code != 0 || r.State != wire.Verified {
		t.Fatalf("probe: exit %d, state %s, reason %q, failed %v\n%s", code, r.State, r.Reason, r.Failed, errOut)
	}
	var got []string
	for _, c := range r.Checks {
		got = append(got, c.Name+"/"+c.From+"@"+c.Binding)
		if !c.Pass || c.Evidence == "" || !strings.Contains(c.Evidence, "host") && c.From != "host" {
			t.Errorf("check %s/%s: pass %v, evidence %q", c.Name, c.From, c.Pass, c.Evidence)
		}
	}
	if !slices.Equal(got, wantChecks(r.Limits)) {
		t.Fatalf("checks:\n got %v\nwant %v", got, wantChecks(r.Limits))
	}
	if len(r.Limits) != 2 || r.Limits[0].Name != "memory" || r.Limits[1].Name != "pids" {
		t.Fatalf("the report must say what enforces the memory and the pids limit: %+v", r.Limits)
	}
	for _, l := range r.Limits {
		if l.EnforcedBy == "none" {
			t.Logf("the %s limit is not enforced on this host: %s", l.Name, l.Detail)
		}
	}
	b := r.Binding
	for name, v := range map[string]string{"os": b.OS, "kernel": b.Kernel, "seccomp": b.Seccomp, "cgroup": b.Cgroup,
		"launcher": b.LauncherDigest, "policy": b.PolicyDigest, "probe": b.ProbeDigest} {
		if v == "" {
			t.Errorf("binding %s is empty", name)
		}
	}
	if b.LandlockABI < 4 {
		t.Errorf("binding Landlock ABI %d", b.LandlockABI)
	}
	t.Logf("probe took %d ms for %d checks", r.DurationMS, len(r.Checks))

	human, _, _ := brokerCmd(t, bin, launcher, state, "probe")
	for _, want := range []string{"capability: verified", "launcher:   sha256:" + b.LauncherDigest, "pass    ptrace"} {
		if !strings.Contains(human, want) {
			t.Errorf("broker probe output lacks %q:\n%s", want, human)
		}
	}
	stored := latestReport(t, state)
	if _, errOut, code := brokerCmd(t, bin, launcher, state, "run", "--approve", "--workspace", t.TempDir(), "--", "true"); code != 0 {
		t.Fatalf("broker run on a verified host: exit %d\n%s", code, errOut)
	}
	if again := latestReport(t, state); !again.At.Equal(stored.At) {
		t.Fatalf("the start after a verified probe probed again (%s, stored %s)", again.At, stored.At)
	}
}

// latestReport reads the journal's last capability report.
func latestReport(t *testing.T, state string) *probe.Report {
	t.Helper()
	r, err := broker.ReadCapability(context.Background(), state)
	if err != nil || r == nil {
		t.Fatalf("stored report: %v %v", r, err)
	}
	return r
}

// TestProbeInjectedFailureRefusesEverything: a broker whose default policy
// deliberately omits one restriction (the state directory readable) is
// unavailable, names the checks the hole broke, and refuses to run
// anything — including what an operator approves at once.
func TestProbeInjectedFailureRefusesEverything(t *testing.T) {
	skipWithoutSandbox(t)
	_, bin, launcher := buildProbeBins(t)
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil { // the hook grants it, so it must exist
		t.Fatal(err)
	}
	out, _, code := brokerCmd(t, bin, launcher, state, "probe", "--json")
	r := probeReport(t, out)
	if code == 0 || r.State != wire.Unavailable {
		t.Fatalf("probe of the insecure build: exit %d, state %s", code, r.State)
	}
	for _, want := range []string{"read_secret/target@in-place", "read_secret/grandchild@in-place",
		"symlink_escape/target@sealed-snapshot", "symlink_escape/grandchild@sealed-snapshot"} {
		if !slices.Contains(r.Failed, want) {
			t.Errorf("failed checks %v lack %s", r.Failed, want)
		}
	}
	if !strings.Contains(r.Reason, "read_secret/target@in-place") || len(r.Hints) == 0 {
		t.Errorf("reason %q, hints %v", r.Reason, r.Hints)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	_, errOut, code := brokerCmd(t, bin, launcher, state, "run", "--approve", "--workspace", filepath.Dir(marker),
		"--", "/bin/sh", "-c", "echo x > ran")
	if code == 0 || !strings.Contains(errOut, "SANDBOX_UNAVAILABLE") || !strings.Contains(errOut, "read_secret") {
		t.Fatalf("run on an unavailable host: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the refused action ran: %v", err)
	}
	if again := latestReport(t, state); again.State != wire.Unavailable {
		t.Fatalf("stored state after the refused run: %s", again.State)
	}
}
