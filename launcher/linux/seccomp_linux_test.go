package linux

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// noBrokerEnv names the file TestHelperNoBrokerChild changes, and makes
// the test binary that child.
const noBrokerEnv = "WARRANT_LAUNCHER_NO_BROKER_CHILD"

// TestNotifiedCallsWithoutTheBroker: once the broker's listener is
// closed (the broker crashed, was killed or restarted), no notified call
// may be performed, and the target may not take the broker's place with
// a listener of its own (the newest filter's notification wins, and its
// CONTINUE would let the call through). A child loads the embedded
// programs, closes the listener, and tries: seccomp with
// SECCOMP_FILTER_FLAG_NEW_LISTENER is EPERM in every flag combination
// (were it not, the child answers its own notifications CONTINUE and
// makes its calls through them); socket and unshare are ENOSYS; chmod
// 04755 and 0600 of a real file fail and its mode reads back unchanged; a
// filter without a listener may still be added.
func TestNotifiedCallsWithoutTheBroker(t *testing.T) {
	if len(programs(false)) == 0 {
		t.Skip("skip: no seccomp programs for this architecture")
	}
	f := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNoBrokerChild$")
	cmd.Env = append(os.Environ(), noBrokerEnv+"="+f)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, v, ok := strings.Cut(l, " "); ok {
			got[name] = v
		}
	}
	for name, want := range map[string]string{
		"listener": "EPERM", "listener_tsync": "EPERM", "listener_killable": "EPERM", "filter_without_listener": "ok",
		"socket": "ENOSYS", "unshare": "ENOSYS", "chmod_setuid": "ENOSYS", "chmod": "ENOSYS",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %s", name, got[name], want)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(f, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o7777 != 0o644 {
		t.Errorf("the file's mode is %o after the broker was gone, want 0644", st.Mode&0o7777)
	}
	if t.Failed() {
		t.Logf("the child printed:\n%s", out)
	}
}

// TestHelperNoBrokerChild is the child of TestNotifiedCallsWithoutTheBroker.
func TestHelperNoBrokerChild(t *testing.T) {
	f := os.Getenv(noBrokerEnv)
	if f == "" {
		t.Skip("skip: the helper process of TestNotifiedCallsWithoutTheBroker")
	}
	os.Exit(noBrokerChild(f))
}

func noBrokerChild(file string) int {
	runtime.LockOSThread() // the filters are this thread's
	if err := installArgs(); err != nil {
		fmt.Println("install", err)
		return 1
	}
	_, listener, err := installSeccomp(false)
	if err != nil {
		fmt.Println("install", err)
		return 1
	}
	unix.Close(listener) // the broker is gone
	// A filter of the target's own that notifies what the launcher's
	// refuses or answers.
	own := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_SOCKET, Jt: 3},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_UNSHARE, Jt: 2},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_FCHMODAT, Jt: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF},
	}
	for _, c := range []struct {
		name  string
		flags uintptr
	}{
		{"listener", unix.SECCOMP_FILTER_FLAG_NEW_LISTENER},
		{"listener_tsync", unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH},
		{"listener_killable", unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV},
	} {
		fd, err := seccompLoad(own, c.flags)
		say(c.name, err)
		if err == nil {
			go answerContinue(fd) // the hole: every call the filter notifies goes through
		}
	}
	allowAll := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	_, err = seccompLoad(allowAll, 0)
	say("filter_without_listener", err)
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	say("socket", err)
	if err == nil {
		unix.Close(fd)
	}
	say("unshare", unix.Unshare(unix.CLONE_NEWUSER))
	say("chmod_setuid", unix.Fchmodat(unix.AT_FDCWD, file, 0o4755, 0))
	say("chmod", unix.Fchmodat(unix.AT_FDCWD, file, 0o600, 0))
	return 0
}

// seccompNotif is struct seccomp_notif, seccompResp struct
// seccomp_notif_resp (linux/seccomp.h).
type (
	seccompNotif struct {
		ID         uint64
		Pid, Flags uint32
		Data       [64]byte
	}
	seccompResp struct {
		ID    uint64
		Val   int64
		Error int32
		Flags uint32
	}
)
