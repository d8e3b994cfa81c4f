package metadata

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dyingChildEnv makes the test binary TestHelperDyingChild.
const dyingChildEnv = "WARRANT_METADATA_DYING_CHILD"

// TestCallerGoneIsNoRefusal: a caller that dies while its chmod waits for
// the broker (killed, or its pid gone) is no refusal: the answer records
// nothing, where reading its memory failing would otherwise read as
// "caller-unreadable".
func TestCallerGoneIsNoRefusal(t *testing.T) {
	parent, child, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDyingChild$")
	cmd.Env = append(os.Environ(), dyingChildEnv+"=1")
	cmd.Dir, cmd.ExtraFiles = t.TempDir(), []*os.File{child}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	defer cmd.Process.Kill()
	listener, err := recvFD(parent)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{listener: listener}
	defer unix.Close(listener)
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 10_000); n != 1 || err != nil {
		t.Fatalf("no notification from the caller: %v", err)
	}
	var n notif
	if err := recv(listener, &n); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	r, d := s.answer(&n)
	if d != nil || r.errno == 0 {
		t.Fatalf("a caller gone mid-call: %v, recorded %+v; want an error and no record", r.errno, d)
	}
}

// TestOpenWithoutHints: an open notified to a server that does not
// observe writes is refused, never continued: only the observer lets
// the kernel continue an open.
func TestOpenWithoutHints(t *testing.T) {
	s, err := Prepare(-1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	cwd := int32(unix.AT_FDCWD)
	p := []byte(t.TempDir() + "/f\x00")
	n := notif{Pid: uint32(os.Getpid()), Data: seccompData{Nr: unix.SYS_OPENAT, Arch: auditArch,
		Args: [6]uint64{uint64(uint32(cwd)), uint64(uintptr(unsafe.Pointer(&p[0]))), unix.O_WRONLY | unix.O_CREAT}}}
	r, _ := s.answer(&n)
	runtime.KeepAlive(p)
	if r.cont || r.errno == 0 {
		t.Errorf("an open answered %+v; want it refused", r)
	}
}

// TestHelperDyingChild is the caller of TestCallerGoneIsNoRefusal: it
// sends the listener of a filter that notifies fchmodat on descriptor 3
// and makes a chmod, which waits until it is killed.
func TestHelperDyingChild(t *testing.T) {
	if os.Getenv(dyingChildEnv) == "" {
		t.Skip("skip: the helper process of TestCallerGoneIsNoRefusal")
	}
	os.Exit(dyingChild())
}

func dyingChild() int {
	runtime.LockOSThread() // the filter is this thread's
	listener, err := notifyFilter([]uint32{unix.SYS_FCHMODAT})
	if err != nil {
		fmt.Fprintln(os.Stderr, "filter:", err)
		return 1
	}
	if err := unix.Sendmsg(3, []byte{0}, unix.UnixRights(listener), nil, 0); err != nil {
		return 1
	}
	unix.Close(listener)
	unix.Chmod("x", 0o600)
	time.Sleep(time.Minute)
	return 0
}
