//go:build linux

package integration

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/broker/view"
	"warrant/receipt"
	"warrant/wire"
)

// The egress harness (issue 34): upstreams on 127.0.0.1 that stand in
// for registries and keep their own account of every connection, and
// the bench that runs `broker run --egress` against them, as root with
// the shared daemon or as uid 65534 with its embedded broker.

// upstream serves the files under Root over HTTP or HTTPS on 127.0.0.1
// and logs, per connection, the raw bytes it read and wrote (below TLS),
// how many it had written when it last went idle after a response, and
// the server name the client's TLS hello carried. Its log is what the
// proxy's record is compared with.
type upstream struct {
	t     testing.TB
	Root  string
	Port  int
	Entry string // its grant: the literal "127.0.0.1:PORT"
	URL   string // http(s)://127.0.0.1:PORT
	CA    []byte // for HTTPS: its certificate in PEM, the client's trust anchor
	mu    sync.Mutex
	conns []*loggedConn
}

// loggedConn is one connection as the upstream saw it.
type loggedConn struct {
	net.Conn
	read, written atomic.Uint64
	// idle is written when the server last went idle after a response
	// (http.StateIdle): what it writes after that unasked (the TLS
	// close_notify of Close) races with the client's end (requireCounted).
	idle   atomic.Uint64
	sni    atomic.Pointer[string]
	once   sync.Once
	closed chan struct{}
}

func (c *loggedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(uint64(n))
	return n, err
}

func (c *loggedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(uint64(n))
	return n, err
}

// ReadFrom counts what the server sends from a file (a response body)
// and keeps its sendfile(2): a registry's server does not copy a file
// through its own memory, and this one shares the host's two CPUs with
// the client and the proxy it stands in front of.
func (c *loggedConn) ReadFrom(r io.Reader) (int64, error) {
	n, err := c.Conn.(io.ReaderFrom).ReadFrom(r)
	c.written.Add(uint64(n))
	return n, err
}

// Close ends the upstream's side first and reads (and counts) what its
// peer still sends until the peer ends too: every byte the peer wrote is
// in the log, the last TLS alert included, whoever closes first.
func (c *loggedConn) Close() error {
	var err error
	c.once.Do(func() {
		if tcp, ok := c.Conn.(*net.TCPConn); ok {
			tcp.CloseWrite()
			tcp.SetReadDeadline(time.Now().Add(daemonSafety))
			io.Copy(io.Discard, struct{ io.Reader }{c})
		}
		err = c.Conn.Close()
		close(c.closed)
	})
	return err
}

type loggingListener struct {
	net.Listener
	u *upstream
}

func (l loggingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &loggedConn{Conn: c, closed: make(chan struct{})}
	l.u.mu.Lock()
	l.u.conns = append(l.u.conns, lc)
	l.u.mu.Unlock()
	return lc, nil
}

// startUpstream starts an upstream serving a fresh directory; the test's
// cleanup stops it.
func startUpstream(t testing.TB, https bool) *upstream {
	t.Helper()
	u := &upstream{t: t, Root: t.TempDir()}
	srv := httptest.NewUnstartedServer(http.FileServer(http.Dir(u.Root)))
	srv.Listener = loggingListener{srv.Listener, u}
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*tls.Conn); ok {
			c = tc.NetConn()
		}
		if lc, ok := c.(*loggedConn); ok && st == http.StateIdle {
			lc.idle.Store(lc.written.Load()) // every byte of the response is written by now
		}
	}
	if https {
		srv.TLS = &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			if lc, ok := hello.Conn.(*loggedConn); ok {
				lc.sni.Store(&hello.ServerName)
			}
			return nil, nil
		}}
		srv.StartTLS()
		u.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	u.Port = srv.Listener.Addr().(*net.TCPAddr).Port
	u.Entry = "127.0.0.1:" + strconv.Itoa(u.Port)
	u.URL = srv.URL
	return u
}

// Write puts a file the upstream serves at /name.
func (u *upstream) Write(name string, body []byte) {
	u.t.Helper()
	p := filepath.Join(u.Root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		u.t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		u.t.Fatal(err)
	}
}

// counted is a connection's bytes, as one side counted them: up is what
// the client side sent to the upstream, down what it sent back. In the
// upstream's log, idle is down when it last went idle after a response
// (down when it never did, or wrote nothing since).
type counted struct {
	up, down, idle uint64
	sni            string
}

// take waits until every connection the upstream accepted since the
// last take has ended (the action that made them has ended: the proxy
// must keep none open), returns them and clears the log.
func (u *upstream) take() []counted {
	u.t.Helper()
	u.mu.Lock()
	conns := u.conns
	u.conns = nil
	u.mu.Unlock()
	var got []counted
	for _, c := range conns {
		select {
		case <-c.closed:
		case <-time.After(daemonSafety):
			u.t.Fatalf("upstream %s: a connection from %s was still open %s after the action ended", u.Entry, c.RemoteAddr(), daemonSafety)
		}
		sni := ""
		if p := c.sni.Load(); p != nil {
			sni = *p
		}
		down, idle := c.written.Load(), c.idle.Load()
		if idle == 0 {
			idle = down
		}
		got = append(got, counted{up: c.read.Load(), down: down, idle: idle, sni: sni})
	}
	return got
}

// egressRecord is an egress record as --json (view.Egress) or the
// receipt (receipt.Egress) shows it, in the parts the tests compare.
type egressRecord struct {
	Granted        []string
	Total, Refused uint64
	Totals         []wire.EgressTotal
	Conns          []egressConn
}

// egressConn is one connection of an egressRecord; Timed says it has a
// start and an end no earlier than its start.
type egressConn struct {
	Host                 string
	Port                 uint16
	Address, SNI, Reason string
	Up, Down             uint64
	Allowed, Timed       bool
}

func viewRecord(v *view.Egress) *egressRecord {
	if v == nil {
		return nil
	}
	r := &egressRecord{Granted: v.Granted, Total: v.Total, Refused: v.Refused}
	for _, t := range v.Totals {
		r.Totals = append(r.Totals, wire.EgressTotal{Entry: t.Entry, Connections: t.Connections, Up: t.UpBytes, Down: t.DownBytes})
	}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	for _, c := range v.Connections {
		r.Conns = append(r.Conns, egressConn{Host: c.Host, Port: c.Port, Address: deref(c.Address), SNI: deref(c.SNI),
			Reason: deref(c.Reason), Up: c.UpBytes, Down: c.DownBytes, Allowed: c.Allowed, Timed: viewTimed(c.Start, c.End)})
	}
	return r
}

// viewTimed says whether start and end are view.Time stamps of a
// connection that started after 2000 and ended no earlier.
func viewTimed(start, end string) bool {
	s, err1 := time.Parse(view.TimeLayout, start)
	e, err2 := time.Parse(view.TimeLayout, end)
	return err1 == nil && err2 == nil && s.Year() > 2000 && !e.Before(s)
}

func receiptRecord(e *receipt.Egress) *egressRecord {
	if e == nil {
		return nil
	}
	r := &egressRecord{Granted: e.Granted, Total: e.Total, Refused: e.Refused}
	for _, t := range e.Totals {
		r.Totals = append(r.Totals, wire.EgressTotal{Entry: t.Entry, Connections: t.Connections, Up: t.UpBytes, Down: t.DownBytes})
	}
	for _, c := range e.Connections {
		r.Conns = append(r.Conns, egressConn{Host: c.Host, Port: c.Port, Address: c.Address, SNI: c.SNI, Reason: c.Reason,
			Up: c.UpBytes, Down: c.DownBytes, Allowed: c.Allowed,
			Timed: c.Start.WallUnixNs > 0 && c.End.WallUnixNs >= c.Start.WallUnixNs && c.End.MonoNs >= c.Start.MonoNs})
	}
	return r
}

// requireCounted requires that the egress record eg (from where: --json
// or the receipt) lists exactly the connections logged (u.take), each
// allowed, to the address it was granted, with its times and the
// upstream's byte counts and server name, and that its entry's total
// sums them.
//
// One thing races, and the record may count it or not: what the
// upstream wrote, unasked, after it last went idle after a response
// (counted.idle; its TLS close_notify as it closes a connection the
// client left open). The client no longer waits for those bytes: it
// exits, the action ends, and the session closes the tunnel, often
// before they arrive. The upstream counts them as written to its socket
// all the same, but the proxy never read them, and its record says what
// it moved: down, or idle, and nothing else.
func (u *upstream) requireCounted(logged []counted, eg *egressRecord, where string) {
	u.t.Helper()
	if len(logged) == 0 {
		u.t.Fatalf("upstream %s: no connection reached it", u.Entry)
	}
	if eg == nil {
		u.t.Fatalf("%s: no egress record; upstream %s logged %+v", where, u.Entry, logged)
	}
	if !slices.Contains(eg.Granted, u.Entry) {
		u.t.Errorf("%s: granted %v, want %s among them", where, eg.Granted, u.Entry)
	}
	var listed []counted
	for _, c := range eg.Conns {
		if c.Port != uint16(u.Port) {
			continue
		}
		if !c.Allowed || c.Host != "127.0.0.1" || !strings.HasPrefix(c.Address, "127.0.0.1") || !c.Timed {
			u.t.Errorf("%s: connection %+v: want allowed, to 127.0.0.1 through 127.0.0.1, with its times", where, c)
		}
		listed = append(listed, counted{up: c.Up, down: c.Down, sni: c.SNI})
	}
	// Pair each listed connection with a logged one: exact first, then
	// short of what the upstream wrote after it went idle.
	left := slices.Clone(logged)
	var unpaired []counted
	for pass := range 2 {
		var rest []counted
		for _, c := range listed {
			i := slices.IndexFunc(left, func(l counted) bool {
				return l.up == c.up && l.sni == c.sni && (l.down == c.down || pass == 1 && l.idle == c.down)
			})
			if i < 0 {
				rest = append(rest, c)
				continue
			}
			if left[i].down != c.down {
				u.t.Logf("%s: a connection to %s counts %d bytes down: the upstream wrote %d more after it went idle, which the proxy did not read before the action ended",
					where, u.Entry, c.down, left[i].down-c.down)
			}
			left = slices.Delete(left, i, i+1)
		}
		listed, unpaired = rest, rest
	}
	if len(unpaired) > 0 || len(left) > 0 {
		u.t.Errorf("%s lists the connections to %s as %+v, which the upstream did not log; the upstream logged %+v, which it does not list",
			where, u.Entry, unpaired, left)
	}
	sum := wire.EgressTotal{Entry: u.Entry}
	for _, c := range eg.Conns {
		if c.Port == uint16(u.Port) {
			sum.Connections++
			sum.Up += c.Up
			sum.Down += c.Down
		}
	}
	i := slices.IndexFunc(eg.Totals, func(x wire.EgressTotal) bool { return x.Entry == u.Entry })
	if i < 0 || eg.Totals[i] != sum {
		u.t.Errorf("%s: totals %+v; want %+v, the sum of its connections", where, eg.Totals, sum)
	}
	if eg.Total < uint64(len(logged)) {
		u.t.Errorf("%s: total %d connections, fewer than the %d the upstream logged", where, eg.Total, len(logged))
	}
}

// egressBench runs `broker run --egress` in a workspace: as root against
// the shared daemon, or as uid 65534 with its embedded broker.
type egressBench struct {
	t      testing.TB
	ws     string
	user   bool
	helper string // the helper program, where the target may execute it
	// cli is `broker ARGS...` on the bench's state: stdout, exit status.
	cli func(args ...string) ([]byte, int)
	// combined is the same with stdout and stderr together.
	combined func(args ...string) string
	// ready makes what the test wrote in the workspace the target's.
	ready func()
}

func rootEgressBench(t *testing.T) *egressBench { return egressBenchOf(t, shared(t)) }

// egressBenchOf is a fresh workspace of an agent of d.
func egressBenchOf(t testing.TB, d *brokerd) *egressBench {
	a := d.newAgent(t)
	return &egressBench{t: t, ws: a.WS, helper: bins.helper,
		cli: func(args ...string) ([]byte, int) {
			out, code := d.CLI(args...)
			return []byte(out), code
		},
		combined: func(args ...string) string {
			cmd := exec.Command(bins.broker, args...)
			cmd.Env = append(os.Environ(), "WARRANT_STATE="+d.State)
			out, _ := cmd.CombinedOutput()
			return string(out)
		},
		ready: func() {}}
}

func userEgressBench(t *testing.T) *egressBench {
	u := asNobody(t)
	b := &egressBench{t: t, ws: u.ws, user: true, helper: filepath.Join(u.bin, "helper"), cli: u.cli,
		combined: func(args ...string) string {
			out, _ := u.command(filepath.Join(u.bin, "broker"), args...).CombinedOutput()
			return string(out)
		},
		ready: u.chownHome}
	copyExecutable(t, bins.helper, b.helper)
	return b
}

// runArgs is `run --approve --workspace WS --profile standard`, an
// --egress for each of grant, and flags.
func (b *egressBench) runArgs(grant []string, flags ...string) []string {
	args := []string{"run", "--approve", "--workspace", b.ws, "--profile", "standard"}
	for _, g := range grant {
		args = append(args, "--egress", g)
	}
	return append(args, flags...)
}

// egressRun is what `broker run --json` says of a run with egress.
type egressRun struct {
	runJSON
	View *view.Egress `json:"egress"`
	raw  string
	code int
}

// egress is the run's egress record.
func (j *egressRun) egress() *egressRecord { return viewRecord(j.View) }

// run runs argv with the grant through `broker run --approve --json`.
func (b *egressBench) run(grant []string, argv ...string) *egressRun {
	b.t.Helper()
	out, code := b.cli(append(b.runArgs(grant, "--json", "--"), argv...)...)
	j := &egressRun{raw: string(out), code: code}
	if err := json.Unmarshal(out, j); err != nil || j.ReceiptID == nil {
		b.t.Fatalf("broker run --json %v with egress %v: exit %d, %v\n%s", argv, grant, code, err, out)
	}
	return j
}

// ok requires that the run exited 0.
func (j *egressRun) ok(t testing.TB) *egressRun {
	t.Helper()
	if j.code != 0 || j.Outcome != "exited" || j.ExitCode == nil || *j.ExitCode != 0 {
		t.Fatalf("broker run: exit %d, outcome %q, error %+v\nstdout:\n%s\nstderr:\n%s", j.code, j.Outcome, j.Error,
			tail(j.Stdout.Text), tail(j.Stderr.Text))
	}
	return j
}

// text runs argv with the grant through `broker run --approve` without
// --json and returns all it printed.
func (b *egressBench) text(grant []string, argv ...string) string {
	b.t.Helper()
	return b.combined(append(b.runArgs(grant, "--"), argv...)...)
}

// receipt returns the egress record of receipt id as `broker receipts
// show --json` prints it (the receipt must verify), and the text
// `receipts show` prints.
func (b *egressBench) receipt(id string) (*egressRecord, string) {
	b.t.Helper()
	out, code := b.cli("receipts", "show", id, "--json")
	var shown struct {
		Verified bool             `json:"verified"`
		Receipt  *receipt.Receipt `json:"receipt"`
	}
	if err := json.Unmarshal(out, &shown); err != nil || code != 0 || !shown.Verified || shown.Receipt == nil {
		b.t.Fatalf("receipts show %s: exit %d, %v\n%s", id, code, err, out)
	}
	text, code := b.cli("receipts", "show", id)
	if code != 0 {
		b.t.Fatalf("receipts show %s: exit %d\n%s", id, code, text)
	}
	return receiptRecord(shown.Receipt.Egress), string(text)
}

// requireEvidence requires that the run's --json, its signed receipt and
// `receipts show` account for every connection u logged, exactly.
func (b *egressBench) requireEvidence(j *egressRun, u *upstream) {
	b.t.Helper()
	logged := u.take()
	u.requireCounted(logged, j.egress(), "broker run --json")
	eg, text := b.receipt(*j.ReceiptID)
	u.requireCounted(logged, eg, "the receipt")
	if !slices.Equal(eg.Conns, j.egress().Conns) {
		b.t.Errorf("the receipt lists the connections as %+v; broker run --json as %+v", eg.Conns, j.egress().Conns)
	}
	if !strings.Contains(text, u.Entry) {
		b.t.Errorf("receipts show does not name %s:\n%s", u.Entry, text)
	}
}

// write writes files into the workspace (as writeTree) and gives them to
// the target's uid.
func (b *egressBench) write(files map[string]string) {
	b.t.Helper()
	writeTree(b.t, b.ws, files)
	b.ready()
}

// refusedConnection finds the record of a refused connection to port.
func refusedConnection(eg *egressRecord, host string, port int) *egressConn {
	if eg == nil {
		return nil
	}
	for i, c := range eg.Conns {
		if !c.Allowed && c.Host == host && c.Port == uint16(port) {
			return &eg.Conns[i]
		}
	}
	return nil
}

// portOf is the port of a listener on 127.0.0.1.
func portOf(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

// quietUDP is a UDP socket on 127.0.0.1 that must receive nothing.
func quietUDP(t *testing.T) net.PacketConn {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// udpPort is the port of a UDP socket on 127.0.0.1.
func udpPort(c net.PacketConn) string { return fmt.Sprint(c.LocalAddr().(*net.UDPAddr).Port) }

// requireNoConnection requires that no connection is queued on l, which
// nothing accepts: the target has exited, so one it made is queued by
// now. It asks the descriptor (accept4, non-blocking): Go's Accept under
// a past deadline reports the deadline without looking.
func requireNoConnection(t testing.TB, l net.Listener) {
	t.Helper()
	nothingQueued(t, l.(syscall.Conn), l.Addr(), func(fd int) error {
		nfd, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
		if err == nil {
			unix.Close(nfd)
		}
		return err
	})
}

// requireNoDatagram requires that no datagram is queued on c, as
// requireNoConnection does for a listener.
func requireNoDatagram(t testing.TB, c net.PacketConn) {
	t.Helper()
	buf := make([]byte, 512)
	nothingQueued(t, c.(syscall.Conn), c.LocalAddr(), func(fd int) error {
		_, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
		return err
	})
}

// nothingQueued requires take, on the socket's descriptor, to find
// nothing (EAGAIN).
func nothingQueued(t testing.TB, c syscall.Conn, addr net.Addr, take func(fd int) error) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got error
	if err := rc.Control(func(fd uintptr) { got = take(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	switch got {
	case unix.EAGAIN:
	case nil:
		t.Errorf("%s %s received something", addr.Network(), addr)
	default:
		t.Errorf("check %s %s: %v", addr.Network(), addr, got)
	}
}
