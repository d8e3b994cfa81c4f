package metadata

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// viewChildEnv names the workspace for TestHelperViewChild, the caller
// of TestServerActsInTheCallersView.
const viewChildEnv = "WARRANT_METADATA_VIEW_CHILD"

// viewChildNoNS is the child's exit status when it cannot make a mount
// namespace.
const viewChildNoNS = 3

// TestServerActsInTheCallersView: the server acts only on regular files,
// directories and symlinks, and never performs a call the caller's own
// mount namespace would refuse. A real caller, in a private mount
// namespace where the workspace's ro/ is a read-only bind, sends its
// metadata calls through a real seccomp listener to a real server. chmod
// and utimensat of ro/f — by a relative path, by an absolute one
// (resolved from the broker's root, not the caller's) and through an
// absolute symlink — are EROFS and the host file keeps its mode and
// times; chmod of a FIFO and of a device node in the workspace is EPERM
// and each keeps its mode; chmod of rw/f is performed and read back.
func TestServerActsInTheCallersView(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: needs root to give the caller a mount namespace with a read-only bind")
	}
	ws := t.TempDir()
	for _, d := range []string{"ro", "rw"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(ws, "ro", "f"), filepath.Join(ws, "abslink")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(ws, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(ws, "dev"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	watched := []string{"ro/f", "fifo", "dev"}
	before := map[string]unix.Stat_t{}
	for _, p := range watched {
		before[p] = lstat(t, filepath.Join(ws, p))
	}

	parent, child, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperViewChild$")
	cmd.Env = append(os.Environ(), viewChildEnv+"="+ws)
	cmd.Dir, cmd.ExtraFiles, cmd.Stdout, cmd.Stderr = ws, []*os.File{child}, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	listener, err := recvFD(parent)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		if cmd.ProcessState.ExitCode() == viewChildNoNS {
			t.Skipf("skip: the caller could not make its mount namespace: %s", stderr.String())
		}
		t.Fatalf("no listener from the caller: %v\n%s", err, stderr.String())
	}
	wsFD, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(wsFD)
	s, err := Prepare(wsFD, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(listener); err != nil {
		t.Fatal(err)
	}
	if _, err := parent.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	waitErr := cmd.Wait()
	st := s.Stop()
	if waitErr != nil {
		t.Fatalf("the caller: %v\n%s\n%s", waitErr, stdout.String(), stderr.String())
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if name, v, ok := strings.Cut(l, " "); ok {
			got[name] = v
		}
	}
	for name, want := range map[string]string{"chmod_rel_ro": "EROFS", "chmod_abs_ro": "EROFS", "chmod_abslink_ro": "EROFS",
		"utimens_ro": "EROFS", "chmod_fifo": "EPERM", "chmod_dev": "EPERM", "chmod_rw": "ok"} {
		if got[name] != want {
			t.Errorf("%s: %q, want %s", name, got[name], want)
		}
	}
	if got["view"] != "ro" {
		t.Errorf("the caller does not see ro/ read-only (%q): the test proves nothing", got["view"])
	}
	if t.Failed() {
		t.Logf("the caller printed:\n%s", stdout.String())
	}
	for _, p := range watched {
		if after := lstat(t, filepath.Join(ws, p)); after.Mode != before[p].Mode || after.Mtim != before[p].Mtim || after.Ctim != before[p].Ctim {
			t.Errorf("%s changed on the host: mode %o -> %o, mtime %v -> %v", p, before[p].Mode, after.Mode, before[p].Mtim, after.Mtim)
		}
	}
	if st := lstat(t, filepath.Join(ws, "rw", "f")); st.Mode&0o7777 != 0o640 {
		t.Errorf("rw/f reads back as mode %o, want 0640 (the server did not serve)", st.Mode&0o7777)
	}
	// Each refusal is recorded under its rule, its call (x/sys's Chmod is
	// fchmodat) and the path the server resolved: the three names of ro/f
	// are one object.
	real, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.Denial{
		{Effect: wire.EffectMetadata, Call: "fchmodat", Object: real + "/ro/f", Rule: wire.RuleReadOnly, Source: wire.SourceBroker, Count: 3},
		{Effect: wire.EffectMetadata, Call: "utimensat", Object: real + "/ro/f", Rule: wire.RuleReadOnly, Source: wire.SourceBroker, Count: 1},
		{Effect: wire.EffectMetadata, Call: "fchmodat", Object: real + "/fifo", Rule: wire.RuleSpecialFile, Source: wire.SourceBroker, Count: 1},
		{Effect: wire.EffectMetadata, Call: "fchmodat", Object: real + "/dev", Rule: wire.RuleSpecialFile, Source: wire.SourceBroker, Count: 1},
	}
	d := st.Denials
	if d == nil || d.Total != 6 || len(d.Records) != len(want) || d.Validate() != nil {
		t.Fatalf("the server's record: %+v, want %+v", d, want)
	}
	for i, r := range d.Records {
		r.FirstUnixNs = 0
		if r != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, r, want[i])
		}
	}
	if st.Done != 1 || st.Refused != 6 {
		t.Errorf("counted %d performed and %d refused, want 1 and 6", st.Done, st.Refused)
	}
}

// TestHelperViewChild is the caller of TestServerActsInTheCallersView,
// run as its own process: it makes a private mount namespace with ro/ a
// read-only bind, installs a filter that notifies chmod, fchmodat,
// fchmodat2 and utimensat, sends its listener on descriptor 3, waits for
// a byte there and makes its calls, printing "NAME ok" or "NAME ERRNO".
func TestHelperViewChild(t *testing.T) {
	ws := os.Getenv(viewChildEnv)
	if ws == "" {
		t.Skip("skip: the helper process of TestServerActsInTheCallersView")
	}
	os.Exit(viewChild(ws))
}

func viewChild(ws string) int {
	runtime.LockOSThread() // the namespace and the filter are this thread's
	ro := filepath.Join(ws, "ro")
	for _, step := range []struct {
		what string
		err  func() error
	}{
		{"unshare", func() error { return unix.Unshare(unix.CLONE_NEWNS) }},
		{"make / private", func() error { return unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") }},
		{"bind ro", func() error { return unix.Mount(ro, ro, "", unix.MS_BIND, "") }},
		{"remount ro", func() error { return unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "") }},
	} {
		if err := step.err(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", step.what, err)
			return viewChildNoNS
		}
	}
	listener, err := notifyFilter([]uint32{unix.SYS_CHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_UTIMENSAT})
	if err != nil {
		fmt.Fprintf(os.Stderr, "filter: %v\n", err)
		return 1
	}
	if err := unix.Sendmsg(3, []byte{0}, unix.UnixRights(listener), nil, 0); err != nil {
		fmt.Fprintf(os.Stderr, "send: %v\n", err)
		return 1
	}
	unix.Close(listener)
	if _, err := unix.Read(3, make([]byte, 1)); err != nil {
		return 1
	}
	attempt := func(name string, err error) {
		if err == nil {
			fmt.Println(name, "ok")
		} else if errno, ok := err.(unix.Errno); ok {
			fmt.Println(name, unix.ErrnoName(errno))
		} else {
			fmt.Println(name, err)
		}
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs("ro/f", &sfs); err == nil && sfs.Flags&unix.ST_RDONLY != 0 {
		fmt.Println("view ro")
	}
	attempt("chmod_rel_ro", unix.Chmod("ro/f", 0o666))
	attempt("chmod_abs_ro", unix.Chmod(filepath.Join(ro, "f"), 0o666))
	attempt("chmod_abslink_ro", unix.Chmod("abslink", 0o666))
	attempt("utimens_ro", unix.UtimesNanoAt(unix.AT_FDCWD, "ro/f", []unix.Timespec{{Sec: 5}, {Sec: 5}}, 0))
	attempt("chmod_fifo", unix.Chmod("fifo", 0o666))
	attempt("chmod_dev", unix.Chmod("dev", 0o666))
	attempt("chmod_rw", unix.Chmod("rw/f", 0o640))
	return 0
}

// notifyFilter installs, on this thread, a seccomp filter that notifies
// the calls nrs (x86-64) and allows everything else, and returns its
// listener.
func notifyFilter(nrs []uint32) (int, error) {
	const ld = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	m := len(nrs)
	prog := []unix.SockFilter{
		{Code: ld, K: 4}, // arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AUDIT_ARCH_X86_64, Jt: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		{Code: ld, K: 0}, // nr
	}
	for i, nr := range nrs {
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: nr, Jt: uint8(m - i)})
	}
	prog = append(prog, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_USER_NOTIF})
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func socketpair() (*os.File, *os.File, error) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.SetNonblock(p[0], true); err != nil { // pollable, for recvFD's deadline
		return nil, nil, err
	}
	return os.NewFile(uintptr(p[0]), "parent"), os.NewFile(uintptr(p[1]), "child"), nil
}

// recvFD receives one descriptor on f, waiting at most ten seconds.
func recvFD(f *os.File) (int, error) {
	if err := f.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return -1, err
	}
	defer f.SetReadDeadline(time.Time{})
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), make([]byte, 1), oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	}); err != nil {
		return -1, err
	}
	if rerr != nil {
		return -1, rerr
	}
	if n == 0 {
		return -1, fmt.Errorf("the caller closed its end")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("no descriptor: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("no descriptor: %v", err)
	}
	return fds[0], nil
}

func lstat(t *testing.T, p string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}
