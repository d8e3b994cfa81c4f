package audit

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"warrant/internal/auditctl"
	"warrant/internal/auditctl/audittest"
	"warrant/internal/landlockabi"
	"warrant/wire"
)

// The kernel's own records, end to end: with audit enabled by the test
// (as an operator would), a child that restricts itself as the launcher
// does (LOG_NEW_EXEC_ON) and execs a shell whose write and create
// outside are refused; the Reader hands the Watch of the child's pid
// both refusals, with the kernel's path.
func TestReaderReadsTheKernelsRecords(t *testing.T) {
	if os.Getenv("AUDIT_TEST_CHILD") != "" {
		return
	}
	if landlockabi.Running() < 7 {
		t.Skip("Landlock ABI 7 logs refusals; this kernel's is older")
	}
	audittest.Enable(t)
	if on, _, err := auditctl.Status(); err != nil || !on {
		t.Fatalf("the status after enabling: %v %v", on, err)
	}
	r, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=TestReaderChild")
	cmd.Env = append(os.Environ(), "AUDIT_TEST_CHILD=1", "VICTIM="+victim, "CREATED="+filepath.Join(dir, "created"))
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []wire.Denial
	w := r.Watch(cmd.Process.Pid, func(d wire.Denial, _ time.Time) { mu.Lock(); got = append(got, d); mu.Unlock() })
	stdin.Close() // the child restricts itself only now, watched from before
	if err := cmd.Wait(); err == nil {
		t.Error("the shell's refused write and create succeeded")
	}
	w.Close()
	want := []wire.Denial{
		{Effect: wire.EffectWrite, Call: "fs.write_file", Object: victim, Rule: wire.RuleOutsideScope, Source: wire.SourceKernelAudit},
		{Effect: wire.EffectCreate, Call: "fs.make_reg", Object: dir, Rule: wire.RuleOutsideScope, Source: wire.SourceKernelAudit},
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range want {
		if !slices.Contains(got, d) {
			t.Errorf("not handed %+v; got %+v", d, got)
		}
	}
	if data, _ := os.ReadFile(victim); string(data) != "x" {
		t.Errorf("the victim was written: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "created")); err == nil {
		t.Error("the file outside was created")
	}
}

// TestReaderChild is the child: once its stdin closes it restricts its
// thread as the launcher does and execs a shell that writes outside.
func TestReaderChild(t *testing.T) {
	if os.Getenv("AUDIT_TEST_CHILD") == "" {
		t.Skip("the child of TestReaderReadsTheKernelsRecords")
	}
	buf := make([]byte, 1)
	os.Stdin.Read(buf)
	runtime.LockOSThread()
	attr := ll.RulesetAttr{HandledAccessFS: ll.AccessFSWriteFile | ll.AccessFSMakeReg}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := ll.LandlockRestrictSelf(fd, unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON); err != nil {
		t.Fatal(err)
	}
	err = syscall.Exec("/bin/sh", []string{"sh", "-c", `echo y >> "$VICTIM"; touch "$CREATED"`}, os.Environ())
	t.Fatal(err)
}
