package probe

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"warrant/broker/internal/egress"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// egressChecks checks egress leases for real, as one more of the
// broker's own actions: the egress prober (probeprog.EgressProber), with
// a grant of one local upstream of the probe's (its literal
// 127.0.0.1:PORT) through a proxy of the probe's own, must fetch the
// upstream's page through the proxy, and the proxy's record must count
// that connection's bytes exactly as the upstream counted them; the
// proxy must refuse another port, and the prober's connects to the
// upstream and to that port, its UDP datagram and its DNS query must
// fail with nothing arriving at any of them. It returns the checks, and
// whether the host offers egress leases (egressFeature); ptrace is the
// binding's ptrace policy.
func egressChecks(ctx context.Context, p Prober, s Setup, ptrace string) ([]Check, Feature) {
	fail := func(why string) ([]Check, Feature) {
		var checks []Check
		for _, name := range probeprog.EgressChecks {
			c := Check{Name: name, From: probeprog.EgressProber, Binding: Bindings[0].String(), Expected: "fails",
				Observed: "not attempted", Evidence: why}
			if name == probeprog.EgressProxy {
				c.Allowed, c.Expected = true, "succeeds"
			}
			checks = append(checks, c)
		}
		return checks, egressFeature(checks, lifecycle.Result{}, netip.AddrPort{}, ptrace)
	}
	h, err := newEgressHost()
	if err != nil {
		return fail("the egress check could not set up its host objects: " + err.Error())
	}
	defer h.close()
	proxy, err := egress.Listen()
	if err != nil {
		return fail("the egress check could not start a proxy: " + err.Error())
	}
	defer proxy.Close()
	run, out, err := proberRun(ctx, p, s, probeprog.EgressProber, proberSetup{
		egress: []string{h.up.entry()},
		fill: func(ws string) error {
			return os.WriteFile(filepath.Join(ws, probeprog.EgressPlanFile), []byte(h.plan.String()), 0o600)
		},
		launch: func(l *runner.Launch) { l.Egress, l.Lease = proxy, "probe-egress" },
	})
	if err != nil {
		return fail("the egress check could not run: " + err.Error())
	}
	checks := h.judge(run, out)
	return checks, egressFeature(checks, run, proxy.Addr(), ptrace)
}

// egressLeaks are the egress checks that fail when anything got past
// the proxy (or when the probe cannot tell): a connection the upstream
// or the other listener accepted, a datagram or a DNS query that
// arrived. egress_proxy and egress_off_lease fail as well when the
// proxy was never reached, and that alone may be a missing mechanism.
var egressLeaks = []string{probeprog.EgressDirect, probeprog.EgressOtherPort, probeprog.EgressUDP, probeprog.EgressDNS}

// egressFeature decides whether the host offers egress leases, from the
// egress checks and the prober's run (FeatureEgress): available when
// every check passed. It is unsupported, and the host may still be
// verified for everything else, only when nothing got past the proxy
// (every check of egressLeaks passed), the proxy recorded no connection
// it made, and the run's record holds a connect the broker refused for
// a lack it names (egressLack): the kernel lacks thread pidfds, or
// refused the broker the ptrace access that pidfd_getfd needs. A leak,
// a wrong count or any failure the probe cannot name leaves the
// feature unavailable without a lack, which fails the host.
func egressFeature(checks []Check, run lifecycle.Result, proxy netip.AddrPort, ptrace string) Feature {
	f := Feature{Name: FeatureEgress, Available: true}
	leaked := false
	for _, c := range checks {
		f.Checks = append(f.Checks, c.Key())
		if !c.Pass {
			f.Available = false
			leaked = leaked || slices.Contains(egressLeaks, c.Name)
		}
	}
	if f.Available || leaked || run.Egress != nil && slices.ContainsFunc(run.Egress.Connections, func(c wire.EgressConnection) bool { return c.Allowed }) {
		return f
	}
	f.Unsupported, f.Fix = egressLack(run.Denials, proxy, ptrace)
	return f
}

// egressLack names what the host lacks for egress leases, as the run's
// record of refusals shows it: a connect (to the proxy, or to an address
// the broker could not read) that the broker refused because pidfd_open
// or pidfd_getfd failed (broker/internal/metadata: rule
// kernel-unsupported for a kernel without thread pidfds, caller-unreadable
// where ptrace access is refused). ptrace is the host's ptrace policy
// (ptraceFact). It returns "" when the record names no such lack.
func egressLack(d *wire.Denials, proxy netip.AddrPort, ptrace string) (lack, fix string) {
	if d == nil {
		return "", ""
	}
	var rule wire.DenialRule
	for _, r := range d.Records {
		if r.Effect == wire.EffectConnect && r.Source == wire.SourceBroker && (r.Object == "" || r.Object == proxy.String()) &&
			(r.Rule == wire.RuleKernelUnsupported || r.Rule == wire.RuleCallerUnreadable) {
			rule = r.Rule
			break
		}
	}
	seen := fmt.Sprintf("the egress prober's connect to the proxy was refused (%s)", rule)
	switch rule {
	case wire.RuleKernelUnsupported:
		return "this kernel has no thread pidfds (pidfd_open with PIDFD_THREAD, Linux 6.9), which the broker needs to take " +
				"the target's socket and connect it to the proxy itself: " + seen,
			"use Linux 6.9 or newer for egress leases"
	case wire.RuleCallerUnreadable:
		lack := "the kernel refused the broker the ptrace access to the target that taking its socket (pidfd_getfd) needs, " +
			"so the broker cannot connect it to the proxy (" + ptrace + "): " + seen
		switch ptrace {
		case "yama ptrace_scope 3":
			return lack, "Yama's ptrace_scope 3 holds until reboot: boot with kernel.yama.ptrace_scope=1 (a sysctl.d file) for egress leases"
		case "yama ptrace_scope 2":
			return lack, "run the broker with CAP_SYS_PTRACE (as root), or set kernel.yama.ptrace_scope=1, then restart the broker"
		}
		return lack, "allow the broker ptrace access to its actions (the LSM policy that restricts ptrace), then restart the broker"
	}
	return "", ""
}

// egressHost is the host side of the egress checks: the upstream, and
// the sockets nothing may reach.
type egressHost struct {
	up            *probeUpstream
	other         int // a TCP listener, never granted
	udp, dns      int // UDP sockets
	plan          probeprog.EgressPlan
	page, content string
}

func newEgressHost() (_ *egressHost, err error) {
	h := &egressHost{other: -1, udp: -1, dns: -1}
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	nonce := random("")
	h.page, h.content = "/warrant-probe-"+nonce[:16], "warrant-probe upstream "+nonce
	if h.up, err = startProbeUpstream(h.page, h.content); err != nil {
		return h, err
	}
	loop := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	var otherPort, udpPort, dnsPort int
	if h.other, otherPort, err = probeListen(unix.AF_INET, unix.SOCK_STREAM, loop); err != nil {
		return h, err
	}
	if h.udp, udpPort, err = probeListen(unix.AF_INET, unix.SOCK_DGRAM, loop); err != nil {
		return h, err
	}
	if h.dns, dnsPort, err = probeListen(unix.AF_INET, unix.SOCK_DGRAM, loop); err != nil {
		return h, err
	}
	h.plan = probeprog.EgressPlan{Upstream: h.up.port, Other: otherPort, UDP: udpPort, DNS: dnsPort, Page: h.page}
	return h, nil
}

func (h *egressHost) close() {
	if h.up != nil {
		h.up.stop()
	}
	for _, fd := range []int{h.other, h.udp, h.dns} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// judge turns the prober's lines, the upstream's log, the sockets and
// the proxy's record into the checks.
func (h *egressHost) judge(run lifecycle.Result, out string) []Check {
	lines := probeprog.ParseLines(out)
	line := func(check string) *probeprog.Line {
		for i := range lines {
			if lines[i].Who == probeprog.EgressProber && lines[i].Check == check {
				return &lines[i]
			}
		}
		return nil
	}
	served, late := h.up.stop()
	entry := h.up.entry()
	var checks []Check
	add := func(name string, allowed, ok bool, evidence string) {
		c := Check{Name: name, From: probeprog.EgressProber, Binding: Bindings[0].String(), Allowed: allowed,
			Expected: "fails", Observed: "not attempted", Pass: ok, Evidence: probeprog.EgressProber + ": " + says(line(name)) + "; host: " + evidence}
		if allowed {
			c.Expected = "succeeds"
		}
		if l := line(name); l != nil {
			c.Observed = map[bool]string{true: "succeeded", false: "failed"}[l.Done]
		}
		checks = append(checks, c)
	}
	// Through the proxy: the page, one connection served, counted alike.
	l := line(probeprog.EgressProxy)
	conns, record := h.counted(run.Egress, entry)
	ok := l != nil && l.Done && l.Detail == h.content && len(served) == 1 && late == 0 && served[0].page == h.page &&
		len(conns) == 1 && conns[0].Up == served[0].read && conns[0].Down == served[0].written
	ended := "outcome " + run.Outcome.String()
	if run.Err != nil {
		ended += fmt.Sprintf(" (%s: %s)", run.Err.Code, run.Err.Message)
	}
	add(probeprog.EgressProxy, true, ok, fmt.Sprintf("the upstream %s served %s; the proxy's record: %s; %s", entry, served, record, ended))
	// Everything else: refused, nothing arrived.
	refused := h.refused(run.Egress, h.plan.Other)
	nothing := func(fd int, stream bool, what string) (bool, string) {
		if got := received(fd, stream); got != "" {
			return false, what + ": " + got
		}
		return true, what + " received nothing"
	}
	otherOK, otherEv := nothing(h.other, true, "the other listener")
	l = line(probeprog.EgressOffLease)
	add(probeprog.EgressOffLease, false, l != nil && !l.Done && otherOK && refused != nil,
		fmt.Sprintf("%s; the proxy's record of 127.0.0.1:%d: %s", otherEv, h.plan.Other, describe(refused)))
	l = line(probeprog.EgressDirect)
	add(probeprog.EgressDirect, false, l != nil && !l.Done && len(served) == len(conns) && late == 0,
		fmt.Sprintf("the upstream accepted %d connection(s), and %d more were queued, against the %d the proxy made", len(served), late, len(conns)))
	l = line(probeprog.EgressOtherPort)
	add(probeprog.EgressOtherPort, false, l != nil && !l.Done && otherOK, otherEv)
	for _, s := range []struct {
		check string
		fd    int
		what  string
	}{{probeprog.EgressUDP, h.udp, "the UDP socket"}, {probeprog.EgressDNS, h.dns, "the DNS socket"}} {
		ok, ev := nothing(s.fd, false, s.what)
		l = line(s.check)
		add(s.check, false, l != nil && !l.Done && ok, ev)
	}
	return checks
}

// counted returns the allowed connections to entry in the proxy's
// record, and describes the record.
func (h *egressHost) counted(eg *wire.Egress, entry string) ([]wire.EgressConnection, string) {
	if eg == nil {
		return nil, "none (nothing recorded the action's connections)"
	}
	var found []wire.EgressConnection
	var said []string
	for _, c := range eg.Connections {
		if c.Allowed && fmt.Sprintf("%s:%d", c.Host, c.Port) == entry {
			found = append(found, c)
			said = append(said, describe(&c))
		}
	}
	return found, fmt.Sprintf("%d connection(s), %d refused; to %s: [%s]", eg.Total, eg.Refused, entry, strings.Join(said, ", "))
}

// refused finds the refused connection to 127.0.0.1:port in the record.
func (h *egressHost) refused(eg *wire.Egress, port int) *wire.EgressConnection {
	if eg == nil {
		return nil
	}
	for i, c := range eg.Connections {
		if !c.Allowed && c.Host == "127.0.0.1" && int(c.Port) == port {
			return &eg.Connections[i]
		}
	}
	return nil
}

func describe(c *wire.EgressConnection) string {
	switch {
	case c == nil:
		return "none"
	case c.Allowed:
		return fmt.Sprintf("allowed through %s, %d bytes up, %d down", c.Address, c.Up, c.Down)
	}
	return "refused: " + c.Reason
}

// probeUpstream is a plain HTTP/1.1 server on 127.0.0.1 that serves one
// page and logs, per connection, the raw bytes it read and wrote.
type probeUpstream struct {
	ln            *net.TCPListener
	port          int
	page, content string
	wg            sync.WaitGroup
	mu            sync.Mutex
	served        servedConns
	stopped       bool
	late          int
}

// servedConn is one connection as the upstream saw it.
type servedConn struct {
	page          string
	read, written uint64
}

type servedConns []servedConn

func (s servedConns) String() string {
	var parts []string
	for _, c := range s {
		parts = append(parts, fmt.Sprintf("%q (%d bytes in, %d out)", c.page, c.read, c.written))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// upstreamSafety bounds how long the upstream waits for a client; no
// check depends on it.
const upstreamSafety = time.Minute

func startProbeUpstream(page, content string) (*probeUpstream, error) {
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("listen for the probe's upstream: %w", err)
	}
	u := &probeUpstream{ln: ln, port: ln.Addr().(*net.TCPAddr).Port, page: page, content: content}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			u.wg.Add(1)
			go func() { defer u.wg.Done(); u.serve(c) }()
		}
	}()
	return u, nil
}

func (u *probeUpstream) entry() string { return fmt.Sprintf("127.0.0.1:%d", u.port) }

// serve answers one request, then reads what the client still sends
// until it closes: every byte it wrote is counted.
func (u *probeUpstream) serve(c *net.TCPConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(upstreamSafety))
	cc := &countingConn{Conn: c}
	got := servedConn{}
	if req, err := http.ReadRequest(bufio.NewReader(cc)); err == nil {
		got.page = req.URL.Path
		status, body := "404 Not Found", "not found\n"
		if req.Method == http.MethodGet && req.URL.Path == u.page {
			status, body = "200 OK", u.content
		}
		fmt.Fprintf(cc, "HTTP/1.1 %s\r\nContent-Length: %d\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n%s", status, len(body), body)
	}
	c.CloseWrite()
	io.Copy(io.Discard, cc)
	got.read, got.written = cc.read, cc.written
	u.mu.Lock()
	u.served = append(u.served, got)
	u.mu.Unlock()
}

// stop ends the upstream (once; later calls return the same) and
// returns the connections it served and how many were queued but not
// yet accepted: with the action over, both are final.
func (u *probeUpstream) stop() (servedConns, int) {
	u.mu.Lock()
	stopped := u.stopped
	u.stopped = true
	u.mu.Unlock()
	if !stopped {
		u.ln.SetDeadline(time.Unix(1, 0)) // the accept loop returns
		if rc, err := u.ln.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				for {
					nfd, _, err := unix.Accept4(int(fd), unix.SOCK_CLOEXEC)
					if err != nil {
						break
					}
					unix.Close(nfd)
					u.late++
				}
			})
		}
		u.ln.Close()
		u.wg.Wait()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.served, u.late
}

// countingConn counts the bytes read and written through it.
type countingConn struct {
	net.Conn
	read, written uint64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read += uint64(n)
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written += uint64(n)
	return n, err
}
