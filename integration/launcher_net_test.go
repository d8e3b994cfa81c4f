//go:build linux

package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/internal/envpolicy"
	"warrant/wire"
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

// Every socket call is notified for the broker to refuse (EPERM) and
// count; the harness does not answer the listener, so here each one is
// ENOSYS: refused all the same (integration/denials_test.go has them
// through the broker).
func TestLauncherNetworkAndIPC(t *testing.T) {
	a := newAction(t)
	tcp := listen(t, "tcp4", "127.0.0.1:0")
	port := fmt.Sprint(portOf(tcp))
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
		// On fd 0 (/dev/null): each call reaches the filter, and the kernel
		// would answer ENOTSOCK, as it does a plain sendto.
		{"connect: the broker's to answer", "errno ENOSYS", []string{"syscall", d(unix.SYS_CONNECT), "0", "ptr", "16"}},
		{"listen", "errno ENOSYS", []string{"syscall", d(unix.SYS_LISTEN), "0", "1"}},
		{"sendto MSG_FASTOPEN", "errno EPERM", []string{"syscall", d(unix.SYS_SENDTO), "0", "ptr", "1", d(unix.MSG_FASTOPEN), "ptr", "16"}},
		{"sendmsg MSG_FASTOPEN", "errno EPERM", []string{"syscall", d(unix.SYS_SENDMSG), "0", "ptr", d(unix.MSG_FASTOPEN | unix.MSG_DONTWAIT)}},
		{"sendmmsg MSG_FASTOPEN", "errno EPERM", []string{"syscall", d(unix.SYS_SENDMMSG), "0", "ptr", "1", d(unix.MSG_FASTOPEN)}},
		{"plain sendto", "errno ENOTSOCK", []string{"syscall", d(unix.SYS_SENDTO), "0", "ptr", "1", "0", "ptr", "16"}},
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
	requireNoConnection(t, tcp)
	requireNoConnection(t, pathSock)
	requireNoConnection(t, abstractSock)
	checkMarker(t, m)
}

// An egress port comes with exactly envpolicy.ProxyEnv(port) and the
// Landlock domain handles TCP; either without the other is refused and
// nothing runs. With both, the target reads the proxy variables, and its
// connect is still the broker's to answer (ENOSYS here, where none does;
// launcher/linux's TestEgressPortIsTheOnlyTCPConnect shows the Landlock
// rule).
func TestLauncherEgressPort(t *testing.T) {
	a := newAction(t)
	const port = 40123
	leased := func(req *wire.SpawnRequest) *wire.SpawnRequest {
		req.EgressPort, req.Env = port, append(req.Env, envpolicy.ProxyEnv(port)...)
		return req
	}
	r := a.Run(leased(a.Helper("env")))
	if ready := r.Ready(t); ready.HandledNet&unix.LANDLOCK_ACCESS_NET_CONNECT_TCP == 0 {
		t.Errorf("Ready handles net rights %#x: TCP connect is not among them", ready.HandledNet)
	}
	for _, kv := range envpolicy.ProxyEnv(port) {
		if !slices.Contains(r.Lines(), kv.Name+"="+kv.Value) {
			t.Errorf("the target's environment lacks %s=%s:\n%s", kv.Name, kv.Value, r.Stdout)
		}
	}
	r = a.Run(leased(a.Helper("syscall", fmt.Sprint(unix.SYS_CONNECT), "0", "ptr", "16")))
	if r.Ready(t); r.Stdout != "errno ENOSYS\n" {
		t.Errorf("connect with an egress port: %q, want errno ENOSYS", r.Stdout)
	}
	noVariables := a.Helper("env")
	noVariables.EgressPort = port
	a.Run(noVariables).Refused(t, wire.CodeArgumentsInvalid)
	noPort := leased(a.Helper("env"))
	noPort.EgressPort = 0
	a.Run(noPort).Refused(t, wire.CodeArgumentsInvalid)
}
