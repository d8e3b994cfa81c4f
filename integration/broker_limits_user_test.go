//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"warrant/receipt"
)

// runAs is `broker run --approve --json --workspace WS --profile profile
// -- argv...` as uid 65534, started by a shell that first moves itself
// into the cgroup.procs files procs (none: it stays where it is). It
// returns the decoded object and the exit status.
func (u *userBroker) runAs(procs []string, profile string, argv ...string) (runJSON, int) {
	u.t.Helper()
	out, stderr, code := u.runIn(procs, append([]string{"--json", "--profile", profile, "--"}, argv...)...)
	var res runJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		u.t.Fatalf("broker run as uid %d: exit %d, %v\n%s\n%s", nobody, code, err, out, stderr)
	}
	return res, code
}

// runIn is `broker run --approve --workspace WS args...` as uid 65534 in
// procs; it returns stdout, stderr (the card and the summary without
// --json) and the exit status.
func (u *userBroker) runIn(procs []string, args ...string) (string, string, int) {
	u.t.Helper()
	script := ""
	for _, p := range procs {
		script += fmt.Sprintf("echo $$ > %s || exit 99\n", p)
	}
	script += `exec "$@"`
	args = append([]string{"-c", script, "sh", filepath.Join(u.bin, "broker"), "run", "--approve", "--workspace", u.ws}, args...)
	cmd := u.command("/bin/sh", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		u.t.Fatal(err)
	}
	return string(out), stderr.String(), cmd.ProcessState.ExitCode()
}

// requireCard runs /bin/true without --json in procs and requires each
// of want on its --full card.
func (u *userBroker) requireCard(procs []string, want ...string) {
	u.t.Helper()
	_, stderr, code := u.runIn(procs, "--full", "--", "/bin/true")
	for _, w := range want {
		if code != 0 || !strings.Contains(stderr, w) {
			u.t.Errorf("exit %d; the card lacks %q:\n%s", code, w, stderr)
		}
	}
}

// cli runs a read-only broker command as uid 65534 on its state.
func (u *userBroker) readCLI(args ...string) string {
	u.t.Helper()
	cmd := exec.Command(filepath.Join(u.bin, "broker"), append(args, "--state", filepath.Join(u.home, "state"))...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		u.t.Fatalf("broker %s as uid %d: %v\n%s\n%s", args[0], nobody, err, out, stderr.String())
	}
	return string(out)
}

func (u *userBroker) receipt(id string) *receipt.Receipt {
	u.t.Helper()
	var shown struct {
		Verified bool             `json:"verified"`
		Receipt  *receipt.Receipt `json:"receipt"`
	}
	out := u.readCLI("receipts", "show", id, "--json")
	if err := json.Unmarshal([]byte(out), &shown); err != nil || !shown.Verified {
		u.t.Fatalf("receipt %s: %v\n%s", id, err, out)
	}
	return shown.Receipt
}

// delegateV1 makes, as root, a cgroup v1 memory and pids directory owned
// by uid 65534 (below this process's own cgroup in each hierarchy), as
// an administrator delegates a subtree, and returns their cgroup.procs
// files. It skips when this host has no such hierarchies.
func delegateV1(t *testing.T) []string {
	t.Helper()
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var procs []string
	for _, ctl := range []string{"memory", "pids"} {
		var rel string
		for line := range strings.Lines(string(self)) {
			if f := strings.SplitN(strings.TrimSpace(line), ":", 3); len(f) == 3 && f[1] == ctl {
				rel = f[2]
			}
		}
		mnt := "/sys/fs/cgroup/" + ctl
		if _, err := os.Stat(filepath.Join(mnt, "cgroup.procs")); rel == "" || err != nil {
			t.Skipf("skip: no cgroup v1 %s hierarchy at %s to delegate", ctl, mnt)
		}
		dir := filepath.Join(mnt, rel, fmt.Sprintf("warrant-test-nobody-%d", os.Getpid()))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("skip: cannot make a cgroup v1 %s directory to delegate: %v", ctl, err)
		}
		t.Cleanup(func() {
			if err := os.Remove(dir); err != nil {
				t.Errorf("remove the delegated cgroup %s: %v", dir, err)
			}
		})
		entries, _ := os.ReadDir(dir)
		for _, e := range append(entries, nil) {
			p := dir
			if e != nil {
				p = filepath.Join(dir, e.Name())
			}
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	return procs
}

// TestLimitsAsAnOrdinaryUser runs the embedded broker as uid 65534. With
// no cgroup writable by it (this host's are root's), the card, the
// capability report and the receipt all say that memory and processes
// are not limited and how to get the limits. With a cgroup v1 memory and
// pids subtree delegated to it, the probe proves both limits as that
// user, a fork loop is held at pids.max and a 5 GiB allocation is ended
// by the memory limit, as for root.
func TestLimitsAsAnOrdinaryUser(t *testing.T) {
	t.Run("undelegated", func(t *testing.T) {
		u := asNobody(t)
		res, code := u.runAs(nil, "short", "/bin/true")
		if code != 0 || res.Outcome != "exited" {
			t.Fatalf("exit %d: %+v", code, res)
		}
		u.requireCard(nil, "Memory and the number of processes are NOT limited on this host.", "systemd-run --user --scope -p Delegate=yes")
		rc := u.receipt(*res.ReceiptID)
		if e := rc.Limits.EnforcedBy; e.Memory != receipt.EnforcedByNone || e.Pids != receipt.EnforcedByNone ||
			rc.Limits.MemoryBytes != 0 || rc.Limits.Pids != 0 || rc.Usage != nil {
			t.Fatalf("the receipt claims a limit that was not applied: %+v usage %+v", rc.Limits, rc.Usage)
		}
		if status := u.readCLI("status"); !strings.Contains(status, "limit:      memory NOT enforced on this host") ||
			!strings.Contains(status, "limit:      pids NOT enforced on this host") {
			t.Fatalf("broker status does not say which limits are missing:\n%s", status)
		}
	})
	t.Run("delegated-cgroup-v1", func(t *testing.T) {
		u := asNobody(t)
		procs := delegateV1(t)
		u.requireCard(procs, "Memory 2 GiB (with swap) by cgroup v1, at most 256 processes and threads by cgroup v1 (profile short).")
		res, code := u.runAs(procs, "short", "/bin/sh", "-c", "i=0; while [ $i -lt 400 ]; do sleep 30 & i=$((i+1)); done")
		if res.Outcome != "exited" || !res.GroupGone {
			t.Fatalf("exit %d: %+v", code, res)
		}
		rc := u.receipt(*res.ReceiptID)
		if rc.Limits.EnforcedBy.Pids != receipt.EnforcedByCgroupV1 || rc.Limits.Pids != 256 || rc.Usage == nil ||
			rc.Usage.PidsLimitHits == nil || *rc.Usage.PidsLimitHits == 0 || rc.Usage.PidsPeak == nil || *rc.Usage.PidsPeak > 256 {
			t.Fatalf("receipt limits %+v usage %+v", rc.Limits, rc.Usage)
		}
		if status := u.readCLI("status"); !strings.Contains(status, "pass    memory_limit") || !strings.Contains(status, "pass    pids_limit") {
			t.Fatalf("the probe did not prove both limits as uid %d:\n%s", nobody, status)
		}
		py := lookPath(t, "python3")
		res, code = u.runAs(procs, allocateProfile, py, "-c", allocate)
		if code != 128+9 || res.Error == nil || res.Error.Code != "MEMORY_LIMIT" || !strings.Contains(res.Error.Message, "ended by the memory limit") {
			t.Fatalf("exit %d: %+v", code, res)
		}
		if rc := u.receipt(*res.ReceiptID); rc.LimitReached != receipt.LimitMemory || rc.Limits.EnforcedBy.Memory != receipt.EnforcedByCgroupV1 {
			t.Fatalf("receipt limitReached %q limits %+v", rc.LimitReached, rc.Limits)
		}
		t.Logf("as uid %d in a delegated cgroup v1 subtree: %d fork(s) refused at pids.max 256 (peak %d), and the 5 GiB target ended by the memory limit",
			nobody, *rc.Usage.PidsLimitHits, *rc.Usage.PidsPeak)
	})
}
