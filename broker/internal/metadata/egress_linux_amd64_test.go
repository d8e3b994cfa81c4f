package metadata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// egressChildEnv makes the test binary TestHelperEgressChild: "egress",
// "none" or "refused", the proxy's port and the other listener's.
const egressChildEnv = "WARRANT_METADATA_EGRESS_CHILD"

// raceConnects is how many connects the racing scenario makes while
// another thread rewrites their address.
const raceConnects = 10_000

// accepted is one connection the stand-in proxy accepted: its source and
// what it sent.
type accepted struct {
	remote  netip.AddrPort
	payload string
}

// standIn accepts and reads every connection to l until it is closed.
type standIn struct {
	mu   sync.Mutex
	got  []accepted
	done chan struct{}
}

func serveStandIn(l *net.TCPListener) *standIn {
	p := &standIn{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			c, err := l.AcceptTCP()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				b, _ := io.ReadAll(c)
				p.mu.Lock()
				p.got = append(p.got, accepted{c.RemoteAddr().(*net.TCPAddr).AddrPort(), string(b)})
				p.mu.Unlock()
			}()
		}
	}()
	return p
}

// runEgressChild runs TestHelperEgressChild in mode against a real
// server (with e, when not nil) and returns what it printed, by name, and
// the server's Stats.
func runEgressChild(t *testing.T, mode string, e Egress, proxyPort, otherPort int) (map[string]string, Stats) {
	t.Helper()
	parent, child, err := socketpair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperEgressChild$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", egressChildEnv, mode, proxyPort, otherPort))
	cmd.ExtraFiles, cmd.Stdout, cmd.Stderr = []*os.File{child}, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	listener, err := recvFD(parent)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no listener from the caller: %v\n%s", err, stderr.String())
	}
	s, err := Prepare(-1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e != nil {
		s.AllowEgress(e)
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
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the caller printed:\n%s%s", stdout.String(), stderr.String())
		}
	})
	return got, st
}

// listenLoopback listens on 127.0.0.1, on a port the kernel chooses.
func listenLoopback(t *testing.T) (*net.TCPListener, int) {
	t.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return l, l.Addr().(*net.TCPAddr).Port
}

// requireNothingAccepted requires no connection to be waiting on l: the
// kernel keeps every connection that completed its handshake there, even
// one its client closed since.
func requireNothingAccepted(t *testing.T, l *net.TCPListener) {
	t.Helper()
	l.SetDeadline(time.Now().Add(200 * time.Millisecond))
	if c, err := l.AcceptTCP(); err == nil {
		t.Errorf("the other listener accepted a connection from %s", c.RemoteAddr())
		c.Close()
	}
}

// TestEgressReachesOnlyTheProxy: a real caller, whose socket and connect
// are notified to a real server with egress, makes TCP sockets (IPv4 and
// IPv6, blocking and not) and connects them to the proxy — a listener
// standing in for it, which receives each connection from the source
// address the server admitted, and what the caller sent. Its connects to
// another listener on 127.0.0.1, to the proxy's port on ::1, to the
// proxy in the other family's form and to a unix socket are EACCES, and
// recorded; the other listener never has a
// connection, also while another thread rewrites the address between
// the proxy's and the other's during 10,000 connects. A source route off
// the host (where the caller may set one: CAP_NET_RAW) leaves nothing in
// flight. UDP, MPTCP and unix sockets stay
// refused and counted.
func TestEgressReachesOnlyTheProxy(t *testing.T) {
	proxyL, proxyPort := listenLoopback(t)
	otherL, otherPort := listenLoopback(t)
	defer otherL.Close()
	p := serveStandIn(proxyL)
	e := &fakeEgress{proxy: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(proxyPort)),
		admitted: map[netip.AddrPort]int{}}
	got, st := runEgressChild(t, "egress", e, proxyPort, otherPort)
	requireNothingAccepted(t, otherL)
	proxyL.Close()
	<-p.done

	for name, want := range map[string]string{
		"tcp4_socket": "ok", "tcp4_connect": "ok", "tcp6_socket": "ok", "tcp6_connect": "ok", "nonblock_socket": "ok",
		"other_connect": "EACCES", "mismatch_connect": "EACCES", "v6loopback_connect": "EACCES", "unix_connect": "EACCES",
		"nonblock_connect": "EINPROGRESS", "nonblock_writable": "ok", "nonblock_so_error": "0", "nonblock_again": "ok",
		"nonblock_third": "EISCONN",
		"udp_socket":     "EPERM", "mptcp_socket": "EPERM", "unix_socket": "EPERM", "flags_socket": "EPERM",
		"race_other": "0",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %s", name, got[name], want)
		}
	}
	connected := 3 // tcp4, tcp6, nonblock
	if got["srcroute_set"] == "ok" {
		connected++ // bound and admitted, its connect refused by the kernel
		if got["srcroute_connect"] != "EINVAL" || got["srcroute_state"] != strconv.Itoa(tcpClose) {
			t.Errorf("a source route off the host: connect %s, TCP state %s; want EINVAL and nothing in flight (%d)",
				got["srcroute_connect"], got["srcroute_state"], tcpClose)
		}
	} else {
		t.Logf("not tried: a source route off the host, which needs CAP_NET_RAW (%s)", got["srcroute_set"])
	}
	raceOK, _ := strconv.Atoi(got["race_ok"])
	raceRefused, _ := strconv.Atoi(got["race_refused"])
	raceBoth, _ := strconv.Atoi(got["race_both"])
	if raceOK == 0 || raceRefused == 0 || raceOK+raceRefused-raceBoth != raceConnects {
		t.Errorf("the race: %d through, %d refused, %d both, of %d: it never raced", raceOK, raceRefused, raceBoth, raceConnects)
	}
	if raceBoth > raceConnects/100 {
		t.Errorf("the race: %d sockets connected though their connect was refused, more than restarts explain", raceBoth)
	}

	// Each connection the proxy accepted came from an address the server
	// admitted before it connected; each named one is the caller's own
	// socket (its payload names the socket's source address).
	e.mu.Lock()
	defer e.mu.Unlock()
	named := map[string]bool{}
	for _, a := range p.got {
		if e.admitted[netip.AddrPortFrom(a.remote.Addr().Unmap(), a.remote.Port())] == 0 {
			t.Errorf("the proxy accepted %s, which was never admitted", a.remote)
		}
		if name, local, ok := strings.Cut(a.payload, " "); ok {
			named[name] = true
			if l, err := netip.ParseAddrPort(local); err != nil || l.Addr().Unmap() != a.remote.Addr().Unmap() || l.Port() != a.remote.Port() {
				t.Errorf("%s: the caller's socket is %s, the proxy's peer %s", name, local, a.remote)
			}
		}
	}
	for _, name := range []string{"tcp4", "tcp6", "nonblock"} {
		if !named[name] {
			t.Errorf("the proxy never received %s's connection", name)
		}
	}
	if len(p.got) > raceOK+3 || len(p.got) < 3 {
		t.Errorf("the proxy accepted %d connections, the caller made %d", len(p.got), raceOK+3)
	}

	// Every socket connected was admitted once (a port is used again once
	// its socket is closed), the one with a source route too; none again
	// when connected already.
	admitted := 0
	for _, n := range e.admitted {
		admitted += n
	}
	if admitted != raceOK+connected {
		t.Errorf("%d admissions, for %d sockets connected", admitted, raceOK+connected)
	}
	// The one whose connect the kernel refused is withdrawn.
	if want := connected - 3; len(e.withdrawn) != want {
		t.Errorf("%d admissions withdrawn (%v), want %d", len(e.withdrawn), e.withdrawn, want)
	}

	// Each refusal is recorded: the connects by the broker, under the
	// address as read, the sockets counted; no connect made is.
	d := st.Denials
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []wire.Denial{
		{Effect: wire.EffectConnect, Call: "connect", Object: fmt.Sprintf("127.0.0.1:%d", otherPort), Family: "AF_INET",
			Rule: wire.RuleNotThroughProxy, Source: wire.SourceBroker, Count: uint64(1 + raceRefused)},
		{Effect: wire.EffectConnect, Call: "connect", Object: fmt.Sprintf("[::ffff:127.0.0.1]:%d", proxyPort), Family: "AF_INET6",
			Rule: wire.RuleNotThroughProxy, Source: wire.SourceBroker, Count: 1},
		{Effect: wire.EffectConnect, Call: "connect", Object: fmt.Sprintf("[::1]:%d", proxyPort), Family: "AF_INET6",
			Rule: wire.RuleNotThroughProxy, Source: wire.SourceBroker, Count: 1},
		{Effect: wire.EffectConnect, Call: "connect", Object: "AF_UNIX /run/warrant-test-nothing.sock", Family: "AF_UNIX",
			Rule: wire.RuleHostSocket, Source: wire.SourceBroker, Count: 1},
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_INET SOCK_DGRAM", Family: "AF_INET", Rule: wire.RuleNoNetwork,
			Source: wire.SourceFilterCount, Count: 1},
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_INET SOCK_STREAM IPPROTO_MPTCP", Family: "AF_INET",
			Rule: wire.RuleNoNetwork, Source: wire.SourceFilterCount, Count: 1},
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_UNIX SOCK_STREAM", Family: "AF_UNIX", Rule: wire.RuleHostSocket,
			Source: wire.SourceFilterCount, Count: 1},
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_INET SOCK_STREAM", Family: "AF_INET", Rule: wire.RuleNoNetwork,
			Source: wire.SourceFilterCount, Count: 1},
	}
	requireRecords(t, d, want)
	if st.Done != 0 || st.Refused != 0 {
		t.Errorf("counted %d metadata calls done, %d refused; the caller made none", st.Done, st.Refused)
	}
}

// TestNoEgressNoNetwork: without AllowEgress, a TCP socket is EPERM and
// a connect (of a socket the caller made before its filter) EACCES, both
// recorded, and the listener it named never has a connection.
func TestNoEgressNoNetwork(t *testing.T) {
	otherL, otherPort := listenLoopback(t)
	defer otherL.Close()
	got, st := runEgressChild(t, "none", nil, 0, otherPort)
	requireNothingAccepted(t, otherL)
	for name, want := range map[string]string{"tcp4_socket": "EPERM", "early_connect": "EACCES"} {
		if got[name] != want {
			t.Errorf("%s: %q, want %s", name, got[name], want)
		}
	}
	requireRecords(t, st.Denials, []wire.Denial{
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_INET SOCK_STREAM", Family: "AF_INET", Rule: wire.RuleNoNetwork,
			Source: wire.SourceFilterCount, Count: 1},
		{Effect: wire.EffectConnect, Call: "connect", Object: fmt.Sprintf("127.0.0.1:%d", otherPort), Family: "AF_INET",
			Rule: wire.RuleNoNetwork, Source: wire.SourceBroker, Count: 1},
	})
}

// TestEgressConnectFailedWithdrawn: when the broker's connect of an
// admitted socket fails (here nothing listens on the proxy's port), the
// admission is withdrawn, so that no later connection from that address
// is taken as the action's; a connect that went through keeps its own.
func TestEgressConnectFailedWithdrawn(t *testing.T) {
	l, port := listenLoopback(t)
	l.Close() // the port is free: a connect to it is refused
	e := &fakeEgress{proxy: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)),
		admitted: map[netip.AddrPort]int{}}
	got, _ := runEgressChild(t, "refused", e, port, 0)
	if got["refused_connect"] != "ECONNREFUSED" || got["refused_again"] != "ECONNREFUSED" {
		t.Fatalf("connects: %q, %q; want ECONNREFUSED", got["refused_connect"], got["refused_again"])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.admitted) != 1 || !maps.Equal(e.admitted, e.withdrawn) {
		t.Errorf("admitted %v, withdrawn %v: want each admission withdrawn", e.admitted, e.withdrawn)
	}
}

// TestEgressConnectBounded: a blocking connect whose handshake the
// target made fail silently (a TCP_MD5SIG key for the proxy's address,
// which the proxy's listener then never answers, and TCP_SYNCNT=127:
// hours of SYNs) ends after connectLimit with ETIMEDOUT, its admission
// withdrawn, instead of holding the notification loop and Stop.
func TestEgressConnectBounded(t *testing.T) {
	l, port := listenLoopback(t)
	defer l.Close()
	e := &fakeEgress{proxy: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)),
		admitted: map[netip.AddrPort]int{}}
	watchdog := time.AfterFunc(time.Minute, func() { panic("the broker's connect to the proxy is not bounded") })
	defer watchdog.Stop()
	got, _ := runEgressChild(t, "hang", e, port, 0)
	if got["md5_set"] != "ok" {
		t.Skipf("TCP_MD5SIG: %s", got["md5_set"])
	}
	if got["hang_connect"] != "ETIMEDOUT" {
		t.Errorf("connect: %q, want ETIMEDOUT", got["hang_connect"])
	}
	requireNothingAccepted(t, l)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.admitted) != 1 || !maps.Equal(e.admitted, e.withdrawn) {
		t.Errorf("admitted %v, withdrawn %v: want the admission withdrawn", e.admitted, e.withdrawn)
	}
}

// TestEgressBindHasAPort: the broker binds a socket to a port of its own
// before it admits it: IP_BIND_ADDRESS_NO_PORT, which would leave the
// port to the connect (a source the proxy was never told), and
// SO_REUSEADDR and SO_REUSEPORT set on a socket are cleared before its
// bind, and each socket connects, admitted by its own port.
func TestEgressBindHasAPort(t *testing.T) {
	proxyL, port := listenLoopback(t)
	p := serveStandIn(proxyL)
	e := &fakeEgress{proxy: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)),
		admitted: map[netip.AddrPort]int{}}
	got, st := runEgressChild(t, "noport", e, port, 0)
	proxyL.Close()
	<-p.done
	for name, want := range map[string]string{"noport_set": "ok", "noport_connect": "ok", "noport_after": "0", "reuse_connect": "ok", "reuse_after": "0 0"} {
		if got[name] != want {
			t.Errorf("%s: %q, want %s", name, got[name], want)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.admitted) != 2 || len(p.got) != 2 {
		t.Errorf("admitted %v; the proxy accepted %v", e.admitted, p.got)
	}
	for _, a := range p.got {
		if a.remote.Port() == 0 || e.admitted[a.remote] != 1 {
			t.Errorf("the proxy accepted a connection from %s; admitted %v", a.remote, e.admitted)
		}
	}
	if d := st.Denials; d != nil && (d.Total != 0 || len(d.Records) != 0) {
		t.Errorf("denials %+v", d)
	}
}

// requireRecords requires d's records to be want, in any order, and to
// be all it counted.
func requireRecords(t *testing.T, d *wire.Denials, want []wire.Denial) {
	t.Helper()
	var total uint64
	for _, w := range want {
		total += w.Count
		i := slices.IndexFunc(d.Records, func(r wire.Denial) bool { r.FirstUnixNs = 0; return r == w })
		if i < 0 {
			t.Errorf("no record %+v", w)
		}
	}
	if len(d.Records) != len(want) || d.Total != total {
		t.Errorf("%d records, total %d: %+v; want %d, total %d", len(d.Records), d.Total, d.Records, len(want), total)
	}
}

// TestHelperEgressChild is the caller of the egress tests: it installs a
// filter that notifies socket and connect, sends its listener on
// descriptor 3, waits for a byte there and makes its calls, printing
// "NAME ok", "NAME ERRNO" or "NAME VALUE".
func TestHelperEgressChild(t *testing.T) {
	args := strings.Fields(os.Getenv(egressChildEnv))
	if len(args) != 3 {
		t.Skip("skip: the helper process of the egress tests")
	}
	proxy, _ := strconv.Atoi(args[1])
	other, _ := strconv.Atoi(args[2])
	os.Exit(egressChild(args[0], proxy, other))
}

func egressChild(mode string, proxy, other int) int {
	runtime.LockOSThread() // the filter is this thread's
	early, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 1
	}
	listener, err := notifyFilter([]uint32{unix.SYS_SOCKET, unix.SYS_CONNECT})
	if err != nil {
		fmt.Fprintln(os.Stderr, "filter:", err)
		return 1
	}
	if err := unix.Sendmsg(3, []byte{0}, unix.UnixRights(listener), nil, 0); err != nil {
		return 1
	}
	unix.Close(listener)
	if _, err := unix.Read(3, make([]byte, 1)); err != nil {
		return 1
	}
	loopback := [4]byte{127, 0, 0, 1}
	if mode == "none" {
		_, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		result("tcp4_socket", err)
		result("early_connect", unix.Connect(early, &unix.SockaddrInet4{Addr: loopback, Port: other}))
		return 0
	}
	unix.Close(early)
	toProxy4 := &unix.SockaddrInet4{Addr: loopback, Port: proxy}
	if mode == "refused" { // one socket, its connect tried twice
		fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		result("refused_connect", unix.Connect(fd, toProxy4))
		result("refused_again", unix.Connect(fd, toProxy4))
		return 0
	}
	switch mode {
	case "hang": // a blocking connect whose SYNs the proxy drops, retried for hours
		fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_SYNCNT, 127)
		m := unix.TCPMD5Sig{Keylen: 4, Key: [80]uint8{'a', 'b', 'c', 'd'}}
		in := (*unix.RawSockaddrInet4)(unsafe.Pointer(&m.Addr))
		in.Family, in.Addr = unix.AF_INET, loopback
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&in.Port))[:], uint16(proxy))
		err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_MD5SIG, string(unsafe.Slice((*byte)(unsafe.Pointer(&m)), unsafe.Sizeof(m))))
		result("md5_set", err)
		if err == nil {
			result("hang_connect", unix.Connect(fd, toProxy4))
		}
		return 0
	case "noport":
		fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		result("noport_set", unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1))
		result("noport_connect", unix.Connect(fd, toProxy4))
		noport, _ := unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT)
		fmt.Println("noport_after", noport)
		unix.Close(fd)
		fd, _ = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		result("reuse_connect", unix.Connect(fd, toProxy4))
		addr, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR)
		port, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT)
		fmt.Println("reuse_after", addr, port)
		unix.Close(fd)
		return 0
	}
	toProxy6 := &unix.SockaddrInet6{Addr: netip.AddrFrom4(loopback).As16(), Port: proxy}

	// Through the proxy: each sends its name and its socket's source.
	for _, c := range []struct {
		name               string
		family, typ, proto int
		to                 unix.Sockaddr
	}{
		{"tcp4", unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0, toProxy4},
		{"tcp6", unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP, toProxy6},
		{"nonblock", unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK, 0, toProxy4},
	} {
		fd, err := unix.Socket(c.family, c.typ, c.proto)
		result(c.name+"_socket", err)
		if err != nil {
			continue
		}
		err = unix.Connect(fd, c.to)
		result(c.name+"_connect", err)
		if err == unix.EINPROGRESS {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			n, err := unix.Poll(fds, 10_000)
			if n != 1 && err == nil {
				err = unix.ETIMEDOUT
			}
			result("nonblock_writable", err)
			v, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
			fmt.Println("nonblock_so_error", v)
			result("nonblock_again", unix.Connect(fd, c.to)) // 0 the first time after it completed, as the kernel's own
			result("nonblock_third", unix.Connect(fd, c.to))
		}
		local, _ := unix.Getsockname(fd)
		unix.Write(fd, []byte(c.name+" "+addrPort(local).String()))
		unix.Close(fd)
	}

	// Refused: another listener, the proxy's port on another address, a
	// unix socket; sockets of other kinds.
	fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	result("other_connect", unix.Connect(fd, &unix.SockaddrInet4{Addr: loopback, Port: other}))
	unix.Close(fd)
	fd, _ = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	result("mismatch_connect", unix.Connect(fd, toProxy6)) // the proxy, but not as this socket's family names it
	unix.Close(fd)
	fd, _ = unix.Socket(unix.AF_INET6, unix.SOCK_STREAM, 0)
	result("v6loopback_connect", unix.Connect(fd, &unix.SockaddrInet6{Addr: netip.IPv6Loopback().As16(), Port: proxy}))
	unix.Close(fd)
	if sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0); err == nil {
		result("unix_connect", unix.Connect(sp[0], &unix.SockaddrUnix{Name: "/run/warrant-test-nothing.sock"}))
	}
	for name, args := range map[string][3]int{
		"udp":   {unix.AF_INET, unix.SOCK_DGRAM, 0},
		"mptcp": {unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP},
		"unix":  {unix.AF_UNIX, unix.SOCK_STREAM, 0},
		"flags": {unix.AF_INET, unix.SOCK_STREAM | 0x4000, 0},
	} {
		_, err := unix.Socket(args[0], args[1], args[2])
		result(name+"_socket", err)
	}

	// A loose source route whose first hop is off the host (TEST-NET-3):
	// the kernel would send the SYN there, were the socket not bound to
	// the loopback address first.
	fd, _ = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	lsrr := []byte{1, 131, 7, 4, 203, 0, 113, 1} // NOP; LSRR: length 7, pointer 4, one hop
	err = unix.SetsockoptString(fd, unix.IPPROTO_IP, unix.IP_OPTIONS, string(lsrr))
	result("srcroute_set", err) // EPERM without CAP_NET_RAW
	if err == nil {
		result("srcroute_connect", unix.Connect(fd, toProxy4))
		if info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			fmt.Println("srcroute_state", info.State)
		}
	}
	unix.Close(fd)

	race(toProxy4, &unix.SockaddrInet4{Addr: loopback, Port: other})
	return 0
}

// race connects raceConnects sockets through one sockaddr_in that another
// thread rewrites meanwhile, between to and other (the family and port,
// one aligned word), and prints how many were connected (getpeername),
// how many connects were refused, and how many were both: a connect a
// signal interrupted after the broker connected it is restarted, and the
// restart reads the address again, which may name the other by then.
// Each socket is closed with a reset, leaving no port in TIME_WAIT.
func race(to, other *unix.SockaddrInet4) {
	var sa [4]uint32 // struct sockaddr_in, aligned
	word := func(s *unix.SockaddrInet4) uint32 {
		b := [4]byte{}
		*(*uint16)(unsafe.Pointer(&b[0])) = unix.AF_INET
		b[2], b[3] = byte(s.Port>>8), byte(s.Port)
		return *(*uint32)(unsafe.Pointer(&b[0]))
	}
	a, b := word(to), word(other)
	sa[0], sa[1] = a, *(*uint32)(unsafe.Pointer(&to.Addr[0]))
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			atomic.StoreUint32(&sa[0], b)
			atomic.StoreUint32(&sa[0], a)
		}
	}()
	var ok, refused, both, others int
	for range raceConnects {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			others++
			continue
		}
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa[0])), unix.SizeofSockaddrInet4)
		peer, err := unix.Getpeername(fd)
		switch connected := err == nil; {
		case connected && addrPort(peer) != netip.AddrPortFrom(netip.AddrFrom4(to.Addr), uint16(to.Port)):
			others++ // connected, not to the proxy
		case connected && (e == 0 || e == unix.EISCONN): // EISCONN: a restart that read the proxy again
			ok++
		case connected && e == unix.EACCES:
			ok, refused, both = ok+1, refused+1, both+1
		case e == unix.EACCES:
			refused++
		default:
			others++
		}
		unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1})
		unix.Close(fd)
	}
	stop.Store(true)
	<-done
	fmt.Println("race_ok", ok)
	fmt.Println("race_refused", refused)
	fmt.Println("race_both", both)
	fmt.Println("race_other", others)
}

// result prints name's outcome: ok, or the errno's name.
func result(name string, err error) {
	if err == nil {
		fmt.Println(name, "ok")
	} else if errno, ok := err.(unix.Errno); ok {
		fmt.Println(name, unix.ErrnoName(errno))
	} else {
		fmt.Println(name, err)
	}
}
