//go:build linux

package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listener is a socket the test owns; it must receive nothing.
func listen(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// receivedNothing requires that no connection is pending on l. The target
// has exited by now, so anything it sent is already queued.
func receivedNothing(t *testing.T, l net.Listener) {
	t.Helper()
	type deadliner interface{ SetDeadline(time.Time) error }
	l.(deadliner).SetDeadline(time.Now())
	if c, err := l.Accept(); err == nil {
		c.Close()
		t.Fatalf("the listener %s received a connection", l.Addr())
	}
}

// Every socket call is notified for the broker to refuse (EPERM) and
// count; the harness does not answer the listener, so here each one is
// ENOSYS: refused all the same (integration/denials_test.go has them
// through the broker).
func TestLauncherNetworkAndIPC(t *testing.T) {
	a := newAction(t)
	tcp := listen(t, "tcp4", "127.0.0.1:0")
	port := fmt.Sprint(tcp.Addr().(*net.TCPAddr).Port)
	path := filepath.Join(a.Outside, "sock")
	pathSock := listen(t, "unix", path)
	abstract := "@warrant-test-" + fmt.Sprint(os.Getpid())
	abstractSock := listen(t, "unix", abstract)
	m := marker(t)
	d := func(v int) string { return fmt.Sprint(v) }
	cases := []struct {
		name, want string
		args       []string
	}{
		{"tcp connect to the test's listener", "errno ENOSYS", []string{"socket", d(unix.AF_INET), d(unix.SOCK_STREAM), "0", port}},
		{"tcp6", "errno ENOSYS", []string{"socket", d(unix.AF_INET6), d(unix.SOCK_STREAM), "0"}},
		{"udp", "errno ENOSYS", []string{"socket", d(unix.AF_INET), d(unix.SOCK_DGRAM), "0"}},
		{"raw", "errno ENOSYS", []string{"socket", d(unix.AF_INET), d(unix.SOCK_RAW), d(unix.IPPROTO_ICMP)}},
		{"netlink", "errno ENOSYS", []string{"socket", d(unix.AF_NETLINK), d(unix.SOCK_RAW), "0"}},
		{"mptcp", "errno ENOSYS", []string{"socket", d(unix.AF_INET), d(unix.SOCK_STREAM), d(unix.IPPROTO_MPTCP), port}},
		{"pathname unix socket outside", "errno ENOSYS", []string{"socket", d(unix.AF_UNIX), d(unix.SOCK_STREAM), "0", "unix:" + path}},
		{"abstract unix socket", "errno ENOSYS", []string{"socket", d(unix.AF_UNIX), d(unix.SOCK_STREAM), "0", "unix:" + abstract}},
		{"socketpair stays allowed", "ok", []string{"socketpair"}},
		{"signal the marker", "errno EPERM", []string{"kill", d(m.Process.Pid), d(int(unix.SIGTERM))}},
		{"signal the broker", "errno EPERM", []string{"kill", d(os.Getpid()), "0"}},
	}
	for _, c := range cases {
		r := a.Run(a.Helper(c.args...))
		r.Ready(t)
		if got := strings.TrimSpace(r.Stdout); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	receivedNothing(t, tcp)
	receivedNothing(t, pathSock)
	receivedNothing(t, abstractSock)
	checkMarker(t, m)
}
