//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/broker/client"
)

// unitLines returns the values of key in a unit file of contrib/systemd.
func unitLines(t *testing.T, unit, key string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "contrib", "systemd", unit))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestSystemdUnits: warrant.socket listens exactly where the broker of
// the default state directory listens under $XDG_RUNTIME_DIR (%t), 0600
// in a 0700 directory; warrant.service delegates its cgroup subtree (the
// memory and pids limits) and runs `broker serve`; systemd-analyze, where
// installed, finds nothing wrong with either but the broker binary not
// being installed here.
func TestSystemdUnits(t *testing.T) {
	rt := t.TempDir()
	if err := os.Chmod(rt, 0o700); err != nil { // as pam_systemd makes it
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	agent, operator := client.SocketPaths(client.XDGStateDir())
	var listened []string
	for _, v := range unitLines(t, "warrant.socket", "ListenStream") {
		listened = append(listened, strings.Replace(v, "%t", rt, 1))
	}
	if !slices.Equal(listened, []string{agent, operator}) {
		t.Fatalf("warrant.socket listens on %q; the broker on %q and %q", listened, agent, operator)
	}
	for unit, want := range map[string][]string{
		"warrant.socket":  {"SocketMode=0600", "DirectoryMode=0700", "Service=warrant.service"},
		"warrant.service": {"Delegate=yes", "KillMode=mixed", "ExecStart=%h/.local/bin/brokerd serve"},
	} {
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			if got := unitLines(t, unit, k); !slices.Contains(got, v) {
				t.Errorf("%s: %s is %q, want %q", unit, k, got, v)
			}
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skipf("skip: no systemd-analyze on this host to verify the units: %v", err)
	}
	dir := t.TempDir()
	for _, u := range []string{"warrant.service", "warrant.socket"} {
		b, err := os.ReadFile(filepath.Join("..", "contrib", "systemd", u))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, u), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(analyze, "verify", "./warrant.socket", "./warrant.service")
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	for line := range strings.Lines(string(out)) {
		if !strings.Contains(line, "/.local/bin/brokerd is not executable") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
}
