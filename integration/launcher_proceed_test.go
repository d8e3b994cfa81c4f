//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// awaitingProceed waits until a thread of pid, the launcher, is blocked
// in recvmsg on its request socket, fd 3 (/proc/PID/task/TID/syscall):
// it waits for Proceed.
func awaitingProceed(t testing.TB, pid int) {
	t.Helper()
	want := strconv.Itoa(unix.SYS_RECVMSG) + " 0x3 "
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	for deadline := time.Now().Add(launchSafety); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("the launcher %d: %v", pid, err)
		}
		for _, task := range tasks {
			if b, _ := os.ReadFile(dir + task.Name() + "/syscall"); strings.HasPrefix(string(b), want) {
				return
			}
		}
	}
	t.Fatalf("the launcher %d never waited in recvmsg on fd 3 after Ready", pid)
}

// The launcher replies Ready once it is confined, then waits for the
// broker's Proceed: until it comes the process is still the launcher,
// blocked in recvmsg, and the target has not run; after it the target
// runs.
func TestLauncherExecutesOnlyAfterProceed(t *testing.T) {
	a := newAction(t)
	r := a.Launch(launch{Req: a.Helper("write", "marker", "x"), AfterReady: func(t testing.TB, sock, pid int) {
		awaitingProceed(t, pid)
		exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if err != nil || exe != bins.launcher {
			t.Fatalf("before Proceed the launcher %d runs %q (%v), not %s", pid, exe, err, bins.launcher)
		}
		if _, err := os.Lstat(filepath.Join(a.Workspace, "marker")); !os.IsNotExist(err) {
			t.Fatalf("the target ran before Proceed: %v", err)
		}
		sendProceed(t, sock, pid)
	}})
	r.Ready(t)
	if b, err := os.ReadFile(filepath.Join(a.Workspace, "marker")); err != nil || string(b) != "x" {
		t.Fatalf("the target did not run after Proceed: %q, %v", b, err)
	}
}

// Anything but the broker's one Proceed after Ready — the socket's end,
// a second request, Proceed with a descriptor, junk, a datagram too long
// for a Proceed — executes nothing: ExecFailed EPROTO, exit 127, no
// marker.
func TestLauncherExecutesNothingWithoutProceed(t *testing.T) {
	proceed, err := wire.EncodeFrame(&wire.Proceed{})
	if err != nil {
		t.Fatal(err)
	}
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pipe[0])
	defer unix.Close(pipe[1])
	// Each case sends this datagram (nil: shuts down the broker's side),
	// with these descriptors, once Ready has come; the request is the
	// action's own.
	cases := map[string]struct {
		frame func(request []byte) []byte
		fds   []int
	}{
		"end of stream":             {func([]byte) []byte { return nil }, nil},
		"a second request":          {func(request []byte) []byte { return request }, nil},
		"proceed with a descriptor": {func([]byte) []byte { return proceed }, []int{pipe[1]}},
		"junk":                      {func([]byte) []byte { return []byte("proceed, please") }, nil},
		"too long":                  {func([]byte) []byte { return reframe(make([]byte, 96)) }, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := newAction(t)
			req := a.Helper("write", "marker", "x")
			request, err := wire.EncodeFrame(req)
			if err != nil {
				t.Fatal(err)
			}
			r := a.Launch(launch{Req: req, AfterReady: func(t testing.TB, sock, _ int) {
				frame := c.frame(request)
				if frame == nil {
					err = unix.Shutdown(sock, unix.SHUT_WR)
				} else {
					err = unix.Sendmsg(sock, frame, unix.UnixRights(c.fds...), nil, 0)
				}
				if err != nil {
					t.Fatal(err)
				}
			}})
			f, ok := r.Reply.(*wire.ExecFailed)
			if !ok || unix.Errno(f.Errno) != unix.EPROTO || r.Execed || r.State.ExitCode() != 127 {
				t.Fatalf("reply %#v, execed %v, exit %v; want ExecFailed EPROTO and no exec", r.Reply, r.Execed, r.State)
			}
			noMarker(t, a.Workspace)
		})
	}
}
