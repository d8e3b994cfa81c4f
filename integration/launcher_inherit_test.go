//go:build linux

package integration

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"warrant/wire"
)

// statusField returns the value of one line of a /proc/PID/status text.
func statusField(t testing.TB, status, name string) string {
	t.Helper()
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in the status:\n%s", name, status)
	return ""
}

// The target starts from a clean slate even when the broker is sloppy: a
// leaked descriptor and an ignored signal must not reach it (a secret in
// the launcher's own environment: TestLauncherEnvironmentIsTheRequestsOnly).
func TestLauncherSelfCheck(t *testing.T) {
	a := newAction(t)
	leaked, err := os.Open(a.Outside)
	if err != nil {
		t.Fatal(err)
	}
	defer leaked.Close()
	signal.Ignore(syscall.SIGHUP) // inherited by the launcher as SIG_IGN
	defer signal.Reset(syscall.SIGHUP)
	req := a.Helper("status")
	grant(t, req, "/proc") // the target reads its own /proc/self/status
	r := a.Launch(launch{Req: req, ExtraFiles: []*os.File{leaked}})
	ready := r.Ready(t)
	out := r.Stdout
	if first := r.Lines()[0]; first != "fds 0,1,2" {
		t.Errorf("target fd table: %q, want exactly 0,1,2", first)
	}
	want := map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "CapInh": "0000000000000000",
		"CapPrm": "0000000000000000", "CapEff": "0000000000000000", "CapBnd": "0000000000000000",
		"CapAmb": "0000000000000000", "SigBlk": "0000000000000000", "SigIgn": "0000000000000000"}
	for name, v := range want {
		if got := statusField(t, out, name); got != v {
			t.Errorf("%s = %s, want %s", name, got, v)
		}
	}
	if got := statusField(t, out, "Seccomp_filters"); got != "2" {
		t.Errorf("Seccomp_filters = %s, want 2", got)
	}
	if ready.LandlockABI < 4 || ready.HandledFS == 0 || ready.HandledNet == 0 || len(ready.SeccompDigest) != 32 {
		t.Errorf("Ready does not state what was enforced: %+v", ready)
	}
	if ready.Binding != wire.SealedSnapshot {
		t.Errorf("binding %s", ready.Binding)
	}
}

func TestLauncherEnvironmentIsTheRequestsOnly(t *testing.T) {
	a := newAction(t)
	r := a.Launch(launch{Req: a.Helper("env"), Env: []string{"WARRANT_CANARY=canary-secret-4711", "LD_PRELOAD=/tmp/evil.so"}})
	r.Ready(t)
	if strings.Contains(r.Stdout, "canary") || strings.Contains(r.Stdout, "LD_PRELOAD") {
		t.Fatalf("inherited environment reached the target:\n%s", r.Stdout)
	}
	if !strings.Contains(r.Stdout, "HOME="+a.Home+"\n") || !strings.Contains(r.Stdout, "TERM=dumb\n") {
		t.Fatalf("the request's environment is missing:\n%s", r.Stdout)
	}
	for _, bad := range []wire.EnvVar{{Name: "LD_PRELOAD", Value: "/tmp/evil.so"}, {Name: "AWS_SECRET_ACCESS_KEY", Value: "x"}} {
		req := a.Helper("write", "marker", "x")
		req.Env = append(req.Env, bad)
		a.Run(req).Refused(t, wire.CodeArgumentsInvalid)
		noMarker(t, a.Workspace)
	}
}
