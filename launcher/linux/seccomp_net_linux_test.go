package linux

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netChildEnv names the two ports TestHelperNetChild tries (the target's
// and the control's), and makes the test binary that child.
const netChildEnv = "WARRANT_LAUNCHER_NET_CHILD"

// TestNetworkCallsUnderTheFilter: a TCP socket such as the broker lets an
// egress lease's target make (here made before the filters, which refuse
// socket without the broker) still reaches nothing by itself. A child
// first shows, unfiltered, that sendto with MSG_FASTOPEN connects without
// connect (the control listener receives a connection); then, with the
// embedded programs loaded and the broker's listener closed, sendto,
// sendmsg and sendmmsg with MSG_FASTOPEN are EPERM, connect is ENOSYS
// (notified, and no broker answers it), listen is ENOSYS and binds no
// port, and a plain sendto reaches the kernel (EPIPE: not connected). The
// target's listener on 127.0.0.1 receives nothing.
func TestNetworkCallsUnderTheFilter(t *testing.T) {
	if len(programs(false)) == 0 {
		t.Skip("skip: no seccomp programs for this architecture")
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_fastopen"); err != nil || !fastOpenClient(string(b)) {
		t.Skipf("skip: TCP fast open is off for clients here (net.ipv4.tcp_fastopen %q, %v)", b, err)
	}
	target, control := tcpListener(t), tcpListener(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNetChild$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d", netChildEnv, port(target), port(control)))
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
		"fastopen_unfiltered": "ok",
		"sendto_fastopen":     "EPERM", "sendto_fastopen_nonblock": "EPERM", "sendmsg_fastopen": "EPERM",
		"sendmmsg_fastopen": "EPERM", "connect": "ENOSYS", "listen": "ENOSYS", "listen_port": "0",
		"sendto_plain": "EPIPE",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %s", name, got[name], want)
		}
	}
	if !accepted(control) {
		t.Error("the unfiltered MSG_FASTOPEN sendto reached no one: this test would not see one that got through")
	}
	if accepted(target) {
		t.Error("the target's listener received a connection")
	}
	if t.Failed() {
		t.Logf("the child printed:\n%s", out)
	}
}

// fastOpenClient reports whether net.ipv4.tcp_fastopen enables clients.
func fastOpenClient(sysctl string) bool {
	v, err := strconv.ParseInt(strings.TrimSpace(sysctl), 0, 64)
	return err == nil && v&1 != 0
}

func tcpListener(t *testing.T) *net.TCPListener {
	t.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func port(l *net.TCPListener) int { return l.Addr().(*net.TCPAddr).Port }

// accepted reports whether a connection is queued on l; the child has
// exited, so anything it sent is queued already.
func accepted(l *net.TCPListener) bool {
	l.SetDeadline(time.Now().Add(100 * time.Millisecond))
	c, err := l.Accept()
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// TestHelperNetChild is the child of TestNetworkCallsUnderTheFilter.
func TestHelperNetChild(t *testing.T) {
	ports := os.Getenv(netChildEnv)
	if ports == "" {
		t.Skip("skip: the helper process of TestNetworkCallsUnderTheFilter")
	}
	var target, control int
	if _, err := fmt.Sscanf(ports, "%d:%d", &target, &control); err != nil {
		fmt.Println("ports", err)
		os.Exit(1)
	}
	os.Exit(netChild(target, control))
}

func netChild(target, control int) int {
	runtime.LockOSThread() // the filters are this thread's
	var socks [3]int
	for i := range socks {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			fmt.Println("socket", err)
			return 1
		}
		socks[i] = fd
	}
	control4 := &unix.SockaddrInet4{Port: control, Addr: [4]byte{127, 0, 0, 1}}
	say("fastopen_unfiltered", unix.Sendto(socks[0], []byte("x"), unix.MSG_FASTOPEN, control4))
	if err := installArgs(); err != nil {
		fmt.Println("install", err)
		return 1
	}
	_, listener, err := installSeccomp(false)
	if err != nil {
		fmt.Println("install", err)
		return 1
	}
	unix.Close(listener) // no broker answers
	fd, to := socks[1], &unix.SockaddrInet4{Port: target, Addr: [4]byte{127, 0, 0, 1}}
	say("sendto_fastopen", unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN, to))
	say("sendto_fastopen_nonblock", unix.Sendto(fd, []byte("x"), unix.MSG_FASTOPEN|unix.MSG_DONTWAIT, to))
	_, err = unix.SendmsgN(fd, []byte("x"), nil, to, unix.MSG_FASTOPEN)
	say("sendmsg_fastopen", err)
	say("sendmmsg_fastopen", sendmmsgTo(fd, [4]byte{127, 0, 0, 1}, target, unix.MSG_FASTOPEN))
	say("connect", unix.Connect(fd, to))
	say("sendto_plain", unix.Sendto(fd, []byte("x"), unix.MSG_NOSIGNAL, to))
	say("listen", unix.Listen(socks[2], 1))
	if sa, err := unix.Getsockname(socks[2]); err == nil {
		fmt.Println("listen_port", sa.(*unix.SockaddrInet4).Port)
	}
	return 0
}

// say prints "name ok" or "name ERRNO".
func say(name string, err error) {
	if errno, ok := err.(unix.Errno); ok {
		fmt.Println(name, unix.ErrnoName(errno))
	} else {
		fmt.Println(name, "ok")
	}
}
