//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is the unprivileged uid the ordinary-user test runs as.
const nobody = 65534

// userBroker is the embedded broker as uid 65534 would use it: its own
// home (owned by it) holding the state directory and a workspace, and
// copies of the binaries in a directory outside that home.
type userBroker struct {
	t             *testing.T
	home, ws, bin string
}

// asNobody sets up a userBroker; it skips unless the test runs as root.
func asNobody(t *testing.T) *userBroker {
	t.Helper()
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
	u := &userBroker{t: t, home: filepath.Join(dir, "u"), bin: filepath.Join(dir, "bin")}
	u.ws = filepath.Join(u.home, "ws")
	for _, d := range []string{u.home, u.ws, u.bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{bins.broker, bins.brokerd, bins.launcher} {
		copyExecutable(t, b, filepath.Join(u.bin, filepath.Base(b)))
	}
	u.chownHome()
	return u
}

// chownHome gives everything under the home to uid 65534.
func (u *userBroker) chownHome() {
	u.t.Helper()
	if err := filepath.Walk(u.home, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	}); err != nil {
		u.t.Fatal(err)
	}
}

// run is `broker run --approve --json --workspace WS -- argv...` as uid
// 65534; it returns the decoded object.
func (u *userBroker) run(argv ...string) runJSON {
	u.t.Helper()
	res, _ := u.runStatus(argv...)
	return res
}

// command is name args... as uid 65534 in the workspace, with the user's
// state directory and home and nothing else in its environment.
func (u *userBroker) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = u.ws
	cmd.Env = []string{"WARRANT_STATE=" + filepath.Join(u.home, "state"), "PATH=/usr/bin:/bin", "HOME=" + u.home}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return cmd
}

// TestOrdinaryUserRunsConfined: warrant's users are not root. The whole
// chain — the capability probe (which proves the sandbox with real
// attempts), approval, launcher, receipt — works for an unprivileged uid.
func TestOrdinaryUserRunsConfined(t *testing.T) {
	u := asNobody(t)
	res := u.run("/usr/bin/id", "-u")
	if res.Outcome != "exited" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("broker run as uid %d: outcome %s, exit %v, error %+v", nobody, res.Outcome, res.ExitCode, res.Error)
	}
	if strings.TrimSpace(res.Stdout.Text) != "65534" {
		t.Fatalf("the target ran as %q, want uid %d", res.Stdout.Text, nobody)
	}
}
