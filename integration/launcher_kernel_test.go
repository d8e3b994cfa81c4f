//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// marker is a process outside the action that the target must not reach.
func marker(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// checkMarker requires the marker to be alive, running and unsignalled.
func checkMarker(t *testing.T, m *exec.Cmd) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.Process.Pid))
	if err != nil {
		t.Fatalf("the marker process is gone: %v", err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if fields[0] != "S" && fields[0] != "R" {
		t.Fatalf("the marker process is in state %s", fields[0])
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.Process.Pid))
	if err != nil {
		t.Fatalf("read the marker's status: %v", err)
	}
	if v := statusField(t, string(status), "ShdPnd"); v != "0000000000000000" {
		t.Fatalf("the marker has a pending signal: %s", v)
	}
}

func requireAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("skip: the x32 and raw-number attempts are written for amd64, not %s", runtime.GOARCH)
	}
}

// Every kernel-surface attempt is made for real by the target. A denial by
// name (and clone with a namespace flag) is notified for the broker to
// refuse and count; the harness does not answer the listener, so here
// each one is ENOSYS, as is an unknown or flag-filtered call: refused all
// the same (integration/denials_test.go has them through the broker:
// EPERM).
func TestLauncherKernelSurface(t *testing.T) {
	m := marker(t)
	pid := fmt.Sprint(m.Process.Pid)
	n := func(nr uintptr) string { return fmt.Sprint(nr) }
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"io_uring_setup", []string{n(unix.SYS_IO_URING_SETUP), "1", "ptr"}, "ENOSYS"},
		{"unshare user", []string{n(unix.SYS_UNSHARE), n(unix.CLONE_NEWUSER)}, "ENOSYS"},
		{"unshare mount", []string{n(unix.SYS_UNSHARE), n(unix.CLONE_NEWNS)}, "ENOSYS"},
		{"setns", []string{n(unix.SYS_SETNS), "0", "0"}, "ENOSYS"},
		{"clone newuser", []string{n(unix.SYS_CLONE), n(unix.CLONE_NEWUSER | uintptr(syscall.SIGCHLD)), "0", "0", "0", "0"}, "ENOSYS"},
		{"clone3", []string{n(unix.SYS_CLONE3), "ptr", "88"}, "ENOSYS"},
		{"fsopen", []string{n(unix.SYS_FSOPEN), "ptr", "0"}, "ENOSYS"},
		{"open_tree", []string{n(unix.SYS_OPEN_TREE), n(^uintptr(99)), "ptr", "0"}, "ENOSYS"},
		{"ptrace attach", []string{n(unix.SYS_PTRACE), n(unix.PTRACE_ATTACH), pid, "0", "0"}, "ENOSYS"},
		{"process_vm_readv", []string{n(unix.SYS_PROCESS_VM_READV), pid, "ptr", "1", "ptr", "1", "0"}, "ENOSYS"},
		{"bpf", []string{n(unix.SYS_BPF), "0", "ptr", "64"}, "ENOSYS"},
		{"perf_event_open", []string{n(unix.SYS_PERF_EVENT_OPEN), "ptr", "0", n(^uintptr(0)), n(^uintptr(0)), "0"}, "ENOSYS"},
		{"userfaultfd", []string{n(unix.SYS_USERFAULTFD), "0"}, "ENOSYS"},
		{"keyctl", []string{n(unix.SYS_KEYCTL), "0", n(^uintptr(2)), "0"}, "ENOSYS"},
		{"kexec_load", []string{n(unix.SYS_KEXEC_LOAD), "0", "0", "0", "0"}, "ENOSYS"},
		{"init_module", []string{n(unix.SYS_INIT_MODULE), "ptr", "0", "ptr"}, "ENOSYS"},
		{"open_by_handle_at", []string{n(unix.SYS_OPEN_BY_HANDLE_AT), n(^uintptr(99)), "ptr", "0"}, "ENOSYS"},
		{"personality linux32", []string{n(unix.SYS_PERSONALITY), "8"}, "ENOSYS"},
		{"personality read_implies_exec", []string{n(unix.SYS_PERSONALITY), "0x400000"}, "ENOSYS"},
		{"personality query", []string{n(unix.SYS_PERSONALITY), "0xffffffff"}, "ok"},
		{"chroot", []string{n(unix.SYS_CHROOT), "ptr"}, "ENOSYS"},
		{"setsid", []string{n(unix.SYS_SETSID)}, "ENOSYS"},
		{"setpgid", []string{n(unix.SYS_SETPGID), "0", "0"}, "ENOSYS"},
		{"getpid allowed", []string{n(unix.SYS_GETPID)}, "ok"},
	}
	a := newAction(t)
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			a.t = t
			r := a.Run(a.Helper(append([]string{"syscall"}, c.args...)...))
			r.Ready(t)
			if got := strings.TrimPrefix(strings.TrimSpace(r.Stdout), "errno "); got != c.want {
				t.Fatalf("%s: got %q, want %s (stderr %q)", c.name, r.Stdout, c.want, r.Stderr)
			}
		})
	}
	checkMarker(t, m)
}

func TestLauncherX32EntryIsKilled(t *testing.T) {
	requireAMD64(t)
	a := newAction(t)
	r := a.Run(a.Helper("syscall", fmt.Sprint(0x40000000|unix.SYS_GETPID)))
	r.Ready(t)
	ws, ok := r.State.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Fatalf("an x32 system call was not killed: %v, stdout %q", r.State, r.Stdout)
	}
}

func TestLauncherMountIsDenied(t *testing.T) {
	a := newAction(t)
	if err := os.Mkdir(a.Path("mnt"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := a.Run(a.Helper("mount", a.Path("mnt")))
	r.Ready(t)
	if r.Stdout != "errno ENOSYS\n" { // notified; the harness answers no listener
		t.Fatalf("mount: %q", r.Stdout)
	}
	var ws, mnt unix.Stat_t
	if err := unix.Stat(a.Workspace, &ws); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(a.Path("mnt"), &mnt); err != nil {
		t.Fatal(err)
	}
	if ws.Dev != mnt.Dev {
		t.Fatal("something is mounted over the target's directory")
	}
}

// TIOCSTI and TIOCLINUX are denied whatever the upper 32 bits of the
// command; other ioctls reach the kernel (ENOTTY on /dev/null).
func TestLauncherTerminalInjection(t *testing.T) {
	a := newAction(t)
	for cmd, want := range map[string]string{
		"0x5412": "errno EPERM", "0x100005412": "errno EPERM", "0xffffffff00005412": "errno EPERM",
		"0x541c": "errno EPERM", "0x10000541c": "errno EPERM", "0x5401": "errno ENOTTY",
	} {
		r := a.Run(a.Helper("ioctl", "0", cmd))
		r.Ready(t)
		if strings.TrimSpace(r.Stdout) != want {
			t.Errorf("ioctl(0, %s): %q, want %s", cmd, r.Stdout, want)
		}
	}
}
