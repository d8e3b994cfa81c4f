// Package egress is the broker's egress proxy: the one way an action
// with an egress grant reaches the network, and the record of what it
// reached (docs/json.md, "egress"; issue 34).
//
// # Mechanism
//
// One Proxy per broker listens on 127.0.0.1 on a port the kernel chose
// (proxy.go). The target cannot connect anywhere itself: the broker
// answers its connect calls (broker/internal/metadata), binds the
// target's own socket to a loopback port, admits that source address
// to the action's Session (Session.Admit) and connects the socket to
// the proxy; when that connect fails, the admission is withdrawn
// (Session.Withdraw). The proxy knows a connection's action by its
// source address alone, and uses an admission for one connection that
// comes within 30 s (admissionLife: one the target left behind expires);
// a connection from an address no open session admitted, or one admitted
// twice (by two sessions, or by one again) before its connection came,
// is closed before a byte is read from it, the latter recorded by each
// session that admitted it. The target's environment names the proxy
// (internal/envpolicy).
//
// A client connection (client.go) sends a request head (at most 16 KiB
// of its own, whether read ahead with the previous request or not,
// within 30 s), one of:
//
//   - CONNECT host:port (tunnel.go): a tunnel, relayed both ways with
//     splice(2) between the two sockets until both sides have finished.
//     The tunnel's first bytes are read, and recorded for the upstream,
//     to take the server name (SNI) of a TLS ClientHello: crypto/tls
//     parses them, over a connection that writes nothing.
//   - an absolute http:// URL (forward.go): the request is sent to its
//     host in origin form, without hop-by-hop and Proxy-* headers, and
//     the response relayed; the connection is kept alive, a request to
//     another destination is another upstream connection.
//
// # What is refused, and why
//
// The proxy connects a request only to an entry of the grant, exactly
// (wire.ParseEgressEntry's canonical host:port; rule
// not-on-egress-lease). The broker resolves a name itself (dial.go),
// never the target, and leaves out every address that reaches this host,
// its networks or its provider rather than the internet
// (wire.EgressLocalAddr: loopback, private, link-local and so the cloud
// metadata services, carrier-grade NAT, unspecified, multicast,
// broadcast, reserved and documentation ranges, and IPv6 forms that
// carry an IPv4 address), and this host's own interface addresses, read
// at each resolving (a service bound to 0.0.0.0 answers on each); a name
// with no other address is refused (rule private-address), so that a
// name the operator granted cannot be pointed (DNS rebinding) at a
// service on the broker's own host. A name's connection whose two ends
// have one address (an address the host gained since) is closed before a
// byte and refused alike. A literal address the grant names is connected as it is: a local
// registry mirror is a real use, which the card shows (wire.EgressLocal). Anything
// else (a request that is not a proxy request, an https:// URL) is
// refused. A refusal is a 403 with an X-Warrant-Refused header (the
// rule) and a body naming the lease, the destination and the grant; a
// refusal by a rule is also a denial (the callback Open is given).
//
// # Evidence
//
// Each attempt (a CONNECT, a plain-HTTP upstream connection, a refused
// request) is counted in Session.Close's wire.Egress: Total and Refused
// (attempts not connected, by a rule or a failure) and Totals per
// granted entry exactly (a connection closed before it sent a byte
// asked for nothing and is not counted); the first wire.MaxConnections listed with the
// address connected to, the SNI, and the bytes written to (Up) and read
// from (Down) the upstream connection. In a tunnel these are io.Copy's
// counts: when the client's side breaks, bytes read from the upstream
// but not yet written to the client are not in Down. Nor are bytes the
// upstream sends once the action is over: Session.Close closes the
// tunnel, and what the proxy had not read by then it never moved, though
// the upstream counts it as written. A TLS server's close_notify for a
// connection its client left open races so: the client exits, the
// server answers its close, and the session may close first. The host
// and SNI a client sent are recorded escaped (wire.DenialObject) and cut
// at a character to wire's cap, "…" marking the cut (recorded); Close's
// record passes wire validation whatever was recorded (text that would
// not is replaced, the connection kept), so that a receipt holds it.
//
// # Bounds
//
// Memory is bounded whatever the target does: records by
// wire.MaxConnections, open client connections per session by 256 (one
// past them is closed unread and counted), admissions by the loopback
// ports, a request head by 16 KiB, a response head by 1 MiB, a
// ClientHello by 64 KiB. Resolving takes at most 10 s, connecting 30 s;
// a transfer has no time limit: Session.Close (the action is over) ends
// every connection of the session.
//
// # Limits
//
// The proxy sees destinations, not contents: it does not intercept TLS,
// so an allowed host can receive whatever the target sends it, and a
// server reached by an allowed name may serve other names on the same
// address (the SNI is recorded, not enforced). A name's addresses are
// the broker's resolver's. The proxy carries TCP only: no UDP, no
// HTTP/1.1 upgrades; a plain-HTTP request with Expect: 100-continue is
// answered by the proxy itself.
package egress
