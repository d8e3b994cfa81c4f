//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is the unprivileged uid the ordinary-user test runs as.
const nobody = 65534

// TestOrdinaryUserRunsConfined: warrant's users are not root. The whole
// chain — the capability probe (which proves the sandbox with real
// attempts), approval, launcher, receipt — works for an unprivileged uid
// whose bounding set the launcher cannot shrink.
func TestOrdinaryUserRunsConfined(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: needs root to switch to an unprivileged uid")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // t.TempDir makes both 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The binaries' directory is in the policy's read set (it is outside
	// the runtime paths), so it must not contain the state directory: the
	// probe would rightly find the state readable and refuse.
	home, bin := filepath.Join(dir, "u"), filepath.Join(dir, "bin")
	ws := filepath.Join(home, "ws")
	for _, d := range []string{home, ws, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{bins.broker, bins.launcher} {
		copyExecutable(t, b, filepath.Join(bin, filepath.Base(b)))
	}
	if err := filepath.Walk(home, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, nobody, nobody)
	}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "broker"), "run", "--approve", "--json", "--workspace", ws, "--",
		"/usr/bin/id", "-u")
	cmd.Dir = ws
	cmd.Env = []string{"WARRANT_STATE=" + filepath.Join(home, "state"), "PATH=/usr/bin:/bin", "HOME=" + home}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.Output()
	var res runJSON
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("broker run as uid %d: %v %v\n%s", nobody, err, jerr, out)
	}
	if res.Outcome != "exited" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("broker run as uid %d: outcome %s, exit %v, error %+v\n%s", nobody, res.Outcome, res.ExitCode, res.Error, out)
	}
	if strings.TrimSpace(res.Stdout.Text) != "65534" {
		t.Fatalf("the target ran as %q, want uid %d", res.Stdout.Text, nobody)
	}
}
