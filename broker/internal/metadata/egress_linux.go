package metadata

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
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
// server's answers too; a refusal recorded after Stop is not in its
// Stats.
func (s *Server) Record(d wire.Denial, at time.Time) {
	d.Effect, d.Call, d.Source = wire.EffectConnect, "connect", wire.SourceBroker
	s.record(d, at)
}

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

// connectProxy connects sock, an AF_INET or AF_INET6 TCP socket (domain),
// to the proxy and returns the connect's result as the caller's: 0,
// EINPROGRESS for a non-blocking socket, ECONNREFUSED, … A socket that is
// connecting or connected already gets EALREADY or EISCONN and is not
// admitted again. One not yet bound is bound to the proxy's loopback
// address, port 0, first, so that the proxy can be told its source
// (Admit) before it connects, and so that no route leaves the loopback
// device whatever options the target set on it: the kernel refuses a
// loopback source on any other device, where a source route (IP_OPTIONS,
// with CAP_NET_RAW) would otherwise send the connection to its first hop.
func (s *Server) connectProxy(c *caller, sock, domain int) unix.Errno {
	info, err := unix.GetsockoptTCPInfo(sock, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return errnoOf(err)
	}
	if info.State == tcpClose {
		local, err := unix.Getsockname(sock)
		if err != nil {
			return errnoOf(err)
		}
		if addrPort(local).Port() == 0 {
			if err := unix.Bind(sock, sockaddrOf(domain, netip.AddrPortFrom(s.proxy.Addr(), 0))); err != nil {
				return errnoOf(err) // EADDRINUSE: no port left; EINVAL: an IPV6_V6ONLY socket
			}
			if local, err = unix.Getsockname(sock); err != nil {
				return errnoOf(err)
			}
		}
		l := addrPort(local)
		if l.Addr().Unmap() != s.proxy.Addr() { // bound elsewhere before the action had it
			return c.refuse(wire.RuleNotThroughProxy)
		}
		s.egress.Admit(netip.AddrPortFrom(l.Addr().Unmap(), l.Port()))
	}
	return errnoOf(retry.EINTR(func() error { return unix.Connect(sock, sockaddrOf(domain, s.proxy)) }))
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
