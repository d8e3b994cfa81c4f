package metadata

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
	"warrant/wire"
)

// A target's network: socket() and connect() are answered here. Without
// egress every socket is refused and counted (counted_linux_amd64.go) and
// every connect refused. With it, an IPv4 or IPv6 TCP socket is let
// through, and a connect reaches the action's proxy, made by the broker,
// or nothing.

// Egress is an action's way out: the broker's proxy, which knows the
// action's connections by their source address.
type Egress interface {
	// Proxy is the proxy's address, on a loopback address.
	Proxy() netip.AddrPort
	// Admit tells the proxy that a connection from local is the
	// action's. The broker calls it before it connects the action's
	// socket, bound to local, to Proxy.
	Admit(local netip.AddrPort)
	// Withdraw undoes Admit(local) when that connect failed: no
	// connection from local is coming.
	Withdraw(local netip.AddrPort)
}

// AllowEgress lets the action make TCP sockets and connect them to e's
// proxy, and nowhere else. It is called before Serve. Without it, with e
// nil, or with a proxy that is not on a loopback address (the source
// address the broker binds a socket to, which keeps every route on the
// loopback device: connectProxy), the action has no network.
func (s *Server) AllowEgress(e Egress) {
	if e == nil {
		return
	}
	p := e.Proxy()
	p = netip.AddrPortFrom(p.Addr().Unmap(), p.Port())
	if !p.Addr().IsLoopback() || p.Port() == 0 {
		return
	}
	s.egress, s.proxy = e, p
}

// Record adds a refusal of the action's egress to its record, seen at at:
// the proxy's refusal of a destination (rule RuleNotOnLease,
// RulePrivateAddress or RuleNotThroughProxy). d's rule, object and
// family ("" or familyName's) are kept; its effect and call are connect's
// and its source is the broker. It is safe for concurrent use, with the
// server's answers too, and after Stop: the proxy may still refuse a
// request while the action's session closes, so a refusal recorded after
// Stop is in Denials, not in Stop's Stats.
func (s *Server) Record(d wire.Denial, at time.Time) {
	d.Effect, d.Call, d.Source = wire.EffectConnect, "connect", wire.SourceBroker
	s.record(d, at)
}

// WatchKernelAudit adds kernel-audit to the sources that watch the
// action (broker/internal/audit reads the kernel's records of Landlock's
// refusals). It must be called before Serve.
func (s *Server) WatchKernelAudit() { s.denials.Watch(wire.SourceKernelAudit) }

// RecordAudit adds a refusal the kernel's audit recorded, source
// kernel-audit; safe for concurrent use, as Record is.
func (s *Server) RecordAudit(d wire.Denial, at time.Time) {
	d.Source = wire.SourceKernelAudit
	s.record(d, at)
}

// Denials is every refusal recorded so far: Stop's Stats.Denials and
// those Record added since. Take it once the action's session is closed.
func (s *Server) Denials() *wire.Denials { return s.denials.Denials() }

// egressSocket reports whether d is a socket() the action may make: with
// egress, an AF_INET or AF_INET6 stream (SOCK_NONBLOCK and SOCK_CLOEXEC
// the only flags) of TCP (protocol 0 or IPPROTO_TCP). The kernel makes it
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE), which is safe here as it is for no
// other call: every argument is in a register, which the caller, stopped
// until the answer, cannot change, so the kernel performs exactly the
// call decided; each is an int to the kernel, its register's low 32 bits,
// as read here.
func (s *Server) egressSocket(d *seccompData) bool {
	if s.egress == nil || d.Arch != auditArch || d.Nr != sysSocket {
		return false
	}
	family, typ, proto := uint32(d.Args[0]), uint32(d.Args[1]), uint32(d.Args[2])
	return (family == unix.AF_INET || family == unix.AF_INET6) &&
		typ&^(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC) == unix.SOCK_STREAM && (proto == 0 || proto == unix.IPPROTO_TCP)
}

// connect answers connect(fd, addr, addrlen); the kernel never continues
// it. The address is read once from the caller's memory, and only decides:
// a connect that names the proxy on an AF_INET or AF_INET6 TCP socket is
// made by the broker, on a duplicate of that socket, to the proxy address
// the broker holds, never to the caller's bytes again (another thread
// may have rewritten them since). Any other is refused, EACCES as
// Landlock refuses a connect, and recorded with the address as read.
func (s *Server) connect(c *caller, n *notif) unix.Errno {
	errno := s.connectAs(c, n)
	if c.rule != 0 {
		return unix.EACCES
	}
	return errno
}

// connectAs is connect, before a refusal is made EACCES.
func (s *Server) connectAs(c *caller, n *notif) unix.Errno {
	a := n.Data.Args
	sa, errno := c.sockaddr(a[1], a[2])
	if errno != 0 {
		return errno
	}
	c.object, c.family = sa.String(), familyName(uint64(sa.family))
	switch {
	case sa.family == unix.AF_UNIX:
		return c.refuse(wire.RuleHostSocket)
	case s.egress == nil:
		return c.refuse(wire.RuleNoNetwork)
	case sa.addr.Addr().Unmap() != s.proxy.Addr() || sa.addr.Port() != s.proxy.Port():
		return c.refuse(wire.RuleNotThroughProxy)
	}
	fd, errno := objFD(a[0])
	if errno != 0 {
		return errno
	}
	if errno := c.openThread(); errno != 0 {
		return errno
	}
	sock, errno := c.getfd(fd)
	if errno != 0 {
		return errno
	}
	defer unix.Close(sock)
	domain, errno := tcpDomain(sock)
	switch {
	case errno != 0:
		return errno // ENOTSOCK
	case domain != int(sa.family): // another kind of socket, or the other family's address
		return c.refuse(wire.RuleNotThroughProxy)
	case !idValid(s.listener, n.ID): // the pidfd, and so sock, may not be the caller's
		return unix.ESRCH
	}
	return s.connectProxy(c, sock, domain)
}

// tcpDomain is the family of sock if it is an AF_INET or AF_INET6 TCP
// stream, or 0.
func tcpDomain(sock int) (int, unix.Errno) {
	var v [3]int
	for i, opt := range []int{unix.SO_DOMAIN, unix.SO_TYPE, unix.SO_PROTOCOL} {
		var err error
		if v[i], err = unix.GetsockoptInt(sock, unix.SOL_SOCKET, opt); err != nil {
			return 0, errnoOf(err)
		}
	}
	if (v[0] != unix.AF_INET && v[0] != unix.AF_INET6) || v[1] != unix.SOCK_STREAM || v[2] != unix.IPPROTO_TCP {
		return 0, 0
	}
	return v[0], 0
}

// tcpClose is TCP_CLOSE (include/net/tcp_states.h): a socket never
// connected, or whose connect failed.
const tcpClose = 7

// connectLimit bounds the broker's connect of a blocking socket, which
// holds the notification loop, and so every call of the action and its
// teardown, while it waits. A connect to the proxy on the loopback device
// takes microseconds, and a SYN the proxy's full accept queue dropped is
// sent again after 1 s and 3 s; only a handshake the target made fail
// (a TCP_MD5SIG key for the proxy's address, which the proxy's listener
// answers with silence, and TCP_SYNCNT=127: hours of SYNs) takes longer.
const connectLimit = 5 * time.Second

// connectProxy connects sock, an AF_INET or AF_INET6 TCP socket (domain),
// to the proxy and returns the connect's result as the caller's: 0,
// EINPROGRESS for a non-blocking socket, ECONNREFUSED, ETIMEDOUT after
// connectLimit, … A socket that is connecting or connected already gets
// EALREADY or EISCONN and is not admitted again; one whose connect fails
// has its admission withdrawn. One not yet bound is bound to the proxy's
// loopback address, a port the kernel chooses, first, so that the proxy
// can be told its source (Admit) before it connects, and so that no route
// leaves the loopback device whatever options the target set on it: the
// kernel refuses a loopback source on any other device, where a source
// route (IP_OPTIONS, with CAP_NET_RAW) would otherwise send the
// connection to its first hop. Before that bind, SO_REUSEADDR and
// SO_REUSEPORT are cleared, so that the port is the socket's alone, and
// IP_BIND_ADDRESS_NO_PORT, which would defer the port to the connect
// (cleared, not refused: client libraries set them); a bind that still
// leaves the port 0 is refused, since the source the proxy would be
// told is not yet known.
func (s *Server) connectProxy(c *caller, sock, domain int) unix.Errno {
	info, err := unix.GetsockoptTCPInfo(sock, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return errnoOf(err)
	}
	var admitted netip.AddrPort // the source admitted, if any
	if info.State == tcpClose {
		l, errno := s.bindProxy(sock, domain)
		switch {
		case errno != 0:
			return errno
		case l.Addr().Unmap() != s.proxy.Addr() || l.Port() == 0: // bound elsewhere before the action had it, or no port
			return c.refuse(wire.RuleNotThroughProxy)
		}
		admitted = netip.AddrPortFrom(l.Addr().Unmap(), l.Port())
		s.egress.Admit(admitted)
	}
	errno := connectWithin(sock, sockaddrOf(domain, s.proxy), connectLimit)
	switch errno {
	case 0, unix.EINPROGRESS, unix.EALREADY, unix.EISCONN: // connecting or connected (EINTR's restart)
	default:
		if admitted.IsValid() {
			s.egress.Withdraw(admitted) // nothing is connecting from it
		}
	}
	return errno
}

// bindProxy binds sock, unless it has a port already, to the proxy's
// address, port 0 (connectProxy), and returns the address it is bound to.
func (s *Server) bindProxy(sock, domain int) (netip.AddrPort, unix.Errno) {
	local, err := unix.Getsockname(sock)
	if err != nil {
		return netip.AddrPort{}, errnoOf(err)
	}
	if addrPort(local).Port() == 0 {
		// IP_BIND_ADDRESS_NO_PORT is an IPPROTO_IP option of IPv6
		// sockets too.
		for _, opt := range [][2]int{{unix.SOL_SOCKET, unix.SO_REUSEADDR}, {unix.SOL_SOCKET, unix.SO_REUSEPORT},
			{unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT}} {
			if err := unix.SetsockoptInt(sock, opt[0], opt[1], 0); err != nil {
				return netip.AddrPort{}, errnoOf(err)
			}
		}
		if err := unix.Bind(sock, sockaddrOf(domain, netip.AddrPortFrom(s.proxy.Addr(), 0))); err != nil {
			return netip.AddrPort{}, errnoOf(err) // EADDRINUSE: no port left; EINVAL: an IPV6_V6ONLY socket
		}
		if local, err = unix.Getsockname(sock); err != nil {
			return netip.AddrPort{}, errnoOf(err)
		}
	}
	return addrPort(local), 0
}

// connectWithin connects sock to sa, a blocking socket's connect ended
// after limit: the socket is shut down, which aborts the handshake, and
// the result is ETIMEDOUT. It is shut down again each second until the
// connect returns: a connect restarted after a signal (SA_RESTART, or
// retry.EINTR) just after a shutdown would start a handshake anew.
func connectWithin(sock int, sa unix.Sockaddr, limit time.Duration) unix.Errno {
	var (
		mu          sync.Mutex
		done, fired bool
		t           *time.Timer
	)
	mu.Lock()
	t = time.AfterFunc(limit, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done { // sock is still this connect's, not closed and its number reused
			fired = true
			unix.Shutdown(sock, unix.SHUT_RDWR)
			t.Reset(time.Second)
		}
	})
	mu.Unlock()
	errno := errnoOf(retry.EINTR(func() error { return unix.Connect(sock, sa) }))
	mu.Lock()
	defer mu.Unlock()
	done = true
	t.Stop()
	if fired && errno != 0 {
		return unix.ETIMEDOUT
	}
	return errno
}

// sockaddrOf is address ap for a socket of domain: on AF_INET6, an IPv4
// address is mapped (::ffff:a.b.c.d).
func sockaddrOf(domain int, ap netip.AddrPort) unix.Sockaddr {
	if domain == unix.AF_INET6 {
		return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
}

// addrPort is an AF_INET or AF_INET6 socket's address (invalid for any
// other).
func addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// sockaddr is the address a connect names, as read from the caller.
type sockaddr struct {
	family uint16
	addr   netip.AddrPort // AF_INET, AF_INET6
	path   string         // AF_UNIX: a path, or "@" and an abstract name
}

// The sizes of struct sockaddr_storage, the most a connect may pass;
// sockaddr_un, the most read of it; and the least of sockaddr_in and of
// sockaddr_in6 (without its scope, SIN6_LEN_RFC2133) the kernel takes.
const (
	sockaddrMax  = 128
	sockaddrRead = unix.SizeofSockaddrUnix
	sockaddrIn   = unix.SizeofSockaddrInet4
	sockaddrIn6  = 24
)

// sockaddr reads connect's address of size n at addr. A size outside
// sockaddr_storage, or too short for the address's family, is EINVAL,
// as the kernel answers; at most sockaddrRead bytes are read, never more
// than n.
func (c *caller) sockaddr(addr, n uint64) (sockaddr, unix.Errno) {
	size := int32(n) // an int to the kernel
	if size < 2 || size > sockaddrMax {
		return sockaddr{}, unix.EINVAL
	}
	b, errno := c.read(addr, min(int(size), sockaddrRead))
	if errno != 0 {
		return sockaddr{}, errno
	}
	sa := sockaddr{family: binary.NativeEndian.Uint16(b)}
	port := func() uint16 { return binary.BigEndian.Uint16(b[2:]) }
	switch sa.family {
	case unix.AF_INET:
		if len(b) < sockaddrIn {
			return sockaddr{}, unix.EINVAL
		}
		sa.addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port())
	case unix.AF_INET6:
		if len(b) < sockaddrIn6 {
			return sockaddr{}, unix.EINVAL
		}
		sa.addr = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port())
	case unix.AF_UNIX:
		p := b[2:]
		if len(p) > 0 && p[0] == 0 {
			sa.path = "@" + string(p[1:])
		} else if i := slices.Index(p, 0); i >= 0 {
			sa.path = string(p[:i])
		} else {
			sa.path = string(p)
		}
	}
	return sa, 0
}

// String is the address as a record names it: "93.184.216.34:443",
// "[2001:db8::1]:443", "AF_UNIX /run/x.sock", or the family.
func (sa sockaddr) String() string {
	switch sa.family {
	case unix.AF_INET, unix.AF_INET6:
		return sa.addr.String()
	case unix.AF_UNIX:
		return "AF_UNIX " + sa.path
	}
	if name, ok := families[uint64(sa.family)]; ok {
		return name
	}
	return fmt.Sprintf("family %d", sa.family)
}

// families are the address families named in records; any other is
// "other", so that a class (whose family is a part) is one of a closed
// set whatever number the target chose.
var families = map[uint64]string{unix.AF_UNIX: "AF_UNIX", unix.AF_INET: "AF_INET", unix.AF_INET6: "AF_INET6",
	unix.AF_NETLINK: "AF_NETLINK", unix.AF_PACKET: "AF_PACKET", unix.AF_BLUETOOTH: "AF_BLUETOOTH",
	unix.AF_ALG: "AF_ALG", unix.AF_VSOCK: "AF_VSOCK", unix.AF_XDP: "AF_XDP", unix.AF_CAN: "AF_CAN",
	unix.AF_TIPC: "AF_TIPC", unix.AF_RDS: "AF_RDS", unix.AF_KEY: "AF_KEY", unix.AF_SMC: "AF_SMC"}

// familyName is family's name in a record: one of families, or "other".
func familyName(family uint64) string {
	if name, ok := families[family]; ok {
		return name
	}
	return "other"
}

// familyNamed reports whether name is one familyName gives.
func familyNamed(name string) bool {
	for _, f := range families {
		if f == name {
			return true
		}
	}
	return name == "other"
}
