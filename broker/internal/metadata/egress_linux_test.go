package metadata

import (
	"encoding/binary"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// fakeEgress stands in for the proxy's session: it keeps what was
// admitted, and withdrawn.
type fakeEgress struct {
	proxy     netip.AddrPort
	mu        sync.Mutex
	admitted  map[netip.AddrPort]int
	withdrawn map[netip.AddrPort]int
}

func (e *fakeEgress) Proxy() netip.AddrPort { return e.proxy }

func (e *fakeEgress) Admit(local netip.AddrPort) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.admitted[local]++
}

func (e *fakeEgress) Withdraw(local netip.AddrPort) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.withdrawn == nil {
		e.withdrawn = map[netip.AddrPort]int{}
	}
	e.withdrawn[local]++
}

// TestSockaddr: connect's address is read within its size, as the kernel
// takes it: a size outside sockaddr_storage, or too short for its
// family, is EINVAL; a record names it as read.
func TestSockaddr(t *testing.T) {
	in := func(port uint16, a ...byte) []byte {
		b := make([]byte, 16)
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], port)
		copy(b[4:], a)
		return b
	}
	in6 := func(port uint16, a netip.Addr) []byte {
		b := make([]byte, 28)
		binary.NativeEndian.PutUint16(b, unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], port)
		a16 := a.As16()
		copy(b[8:], a16[:])
		return b
	}
	un := func(path string) []byte {
		b := make([]byte, 2, 110)
		binary.NativeEndian.PutUint16(b, unix.AF_UNIX)
		return append(b, path...)
	}
	family := func(f uint16) []byte { return binary.NativeEndian.AppendUint16(nil, f) }
	for _, c := range []struct {
		b     []byte
		size  uint64
		errno unix.Errno
		want  string
	}{
		{in(443, 93, 184, 216, 34), 16, 0, "93.184.216.34:443"},
		{in(443, 93, 184, 216, 34), 1<<32 | 16, 0, "93.184.216.34:443"}, // an int: the low 32 bits
		{in(443, 93, 184, 216, 34), 15, unix.EINVAL, ""},
		{in(443, 93, 184, 216, 34), 1, unix.EINVAL, ""},
		{in(443, 93, 184, 216, 34), 129, unix.EINVAL, ""},
		{in(443, 93, 184, 216, 34), 1<<32 - 1, unix.EINVAL, ""}, // -1
		{in6(8080, netip.MustParseAddr("::ffff:127.0.0.1")), 28, 0, "[::ffff:127.0.0.1]:8080"},
		{in6(443, netip.MustParseAddr("2001:db8::1")), 24, 0, "[2001:db8::1]:443"},
		{in6(443, netip.MustParseAddr("2001:db8::1")), 23, unix.EINVAL, ""},
		{un("/run/x.sock\x00junk"), 110, 0, "AF_UNIX /run/x.sock"},
		{un("\x00abstract"), 11, 0, "AF_UNIX @abstract"},
		{family(unix.AF_NETLINK), 2, 0, "AF_NETLINK"},
		{family(unix.AF_UNSPEC), 2, 0, "family 0"},
		{family(999), 2, 0, "family 999"},
	} {
		c2 := &caller{pid: os.Getpid()}
		buf := make([]byte, 128) // the kernel may read up to the size given
		copy(buf, c.b)
		sa, errno := c2.sockaddr(uint64(uintptr(unsafe.Pointer(&buf[0]))), c.size)
		c2.close()
		if errno != c.errno || errno == 0 && sa.String() != c.want {
			t.Errorf("%x (size %d): %q %v, want %q %v", c.b, c.size, sa.String(), errno, c.want, c.errno)
		}
	}
	c := &caller{pid: os.Getpid()}
	defer c.close()
	if _, errno := c.sockaddr(0, 16); errno != unix.EFAULT {
		t.Errorf("a NULL address: %v, want EFAULT", errno)
	}
}

// TestEgressSocket: with egress, only an AF_INET or AF_INET6 TCP stream
// socket continues (its register's low 32 bits, as the kernel reads
// them); without egress none does.
func TestEgressSocket(t *testing.T) {
	s := &Server{}
	e := &fakeEgress{proxy: netip.MustParseAddrPort("127.0.0.1:8080")}
	sock := func(family, typ, proto uint64) *seccompData {
		return &seccompData{Nr: sysSocket, Arch: auditArch, Args: [6]uint64{family, typ, proto}}
	}
	if s.egressSocket(sock(unix.AF_INET, unix.SOCK_STREAM, 0)) {
		t.Fatal("a socket continues without egress")
	}
	s.AllowEgress(e)
	for d, ok := range map[*seccompData]bool{
		sock(unix.AF_INET, unix.SOCK_STREAM, 0):                                                      true,
		sock(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 6):                true,
		sock(1<<32|unix.AF_INET, 1<<32|unix.SOCK_STREAM, 1<<32|unix.IPPROTO_TCP):                     true,
		sock(unix.AF_INET, unix.SOCK_DGRAM, 0):                                                       false,
		sock(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_TCP):                                          false,
		sock(unix.AF_INET, unix.SOCK_SEQPACKET, 0):                                                   false,
		sock(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP):                                     false,
		sock(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP):                                      false,
		sock(unix.AF_INET, unix.SOCK_STREAM|0x4000, 0):                                               false,
		sock(unix.AF_UNIX, unix.SOCK_STREAM, 0):                                                      false,
		sock(unix.AF_PACKET, unix.SOCK_STREAM, 0):                                                    false,
		{Nr: sysConnect, Arch: auditArch, Args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM}}:           false,
		{Nr: sysSocket, Arch: unix.AUDIT_ARCH_I386, Args: [6]uint64{unix.AF_INET, unix.SOCK_STREAM}}: false,
	} {
		if s.egressSocket(d) != ok {
			t.Errorf("socket%v on %#x: continues %v, want %v", d.Args[:3], d.Arch, !ok, ok)
		}
	}
}

// TestAllowEgressLoopbackOnly: a proxy not on a loopback address (which
// the broker binds a socket to before it connects it) is no egress.
func TestAllowEgressLoopbackOnly(t *testing.T) {
	for p, ok := range map[string]bool{"127.0.0.1:8080": true, "[::ffff:127.0.0.1]:8080": true, "[::1]:8080": true,
		"192.0.2.1:8080": false, "0.0.0.0:8080": false, "127.0.0.1:0": false} {
		s := &Server{}
		s.AllowEgress(&fakeEgress{proxy: netip.MustParseAddrPort(p)})
		if (s.egress != nil) != ok || ok && s.proxy.Addr().Is4In6() {
			t.Errorf("%s: egress %v (proxy %s), want %v, unmapped", p, s.egress != nil, s.proxy, ok)
		}
	}
}

// TestRecordConcurrent: the proxy's refusals (Record, from its own
// goroutines) and the server's own land in one record, each counted.
func TestRecordConcurrent(t *testing.T) {
	s, err := Prepare(-1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if i%2 == 0 {
					s.Record(wire.Denial{Object: "example.org:443", Rule: wire.RuleNotOnLease}, time.Now())
				} else {
					s.record(wire.Denial{Effect: wire.EffectConnect, Call: "connect", Object: "127.0.0.1:1", Family: "AF_INET",
						Rule: wire.RuleNotThroughProxy, Source: wire.SourceBroker}, time.Now())
				}
			}
		}()
	}
	wg.Wait()
	d := s.Stop().Denials
	if err := d.Validate(); err != nil || d.Total != 8000 || len(d.Counts) != 2 || d.Counts[0].Count != 4000 {
		t.Fatalf("%+v (%v)", d, err)
	}
}
