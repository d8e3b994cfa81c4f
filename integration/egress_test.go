//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Egress leases end to end (issue 34): an approved action reaches exactly
// the upstream its approval names, through the broker's proxy, by the
// clients an agent runs (curl, Python, git, npm, pip), and --json, the
// signed receipt and `receipts show` count each connection's bytes as
// the upstream itself counted them. Off the lease — no lease, another
// port, a name, the upstream itself reached directly, UDP, DNS — nothing
// arrives, and what the broker prints names the refusal.

// egressClient is one client fetching from an upstream through the
// proxy: setup writes what it needs and returns its argv; check reads
// what it fetched back from the host.
type egressClient struct {
	name  string
	https bool
	core  bool // run as uid 65534 too
	setup func(b *egressBench, u *upstream, mark string) (argv []string, check func())
}

// fetchedBlob is a check that the file got in ws holds want.
func fetchedBlob(t testing.TB, ws string, want []byte) func() {
	return func() {
		got, err := os.ReadFile(filepath.Join(ws, "got"))
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("host: got is %d bytes (%v), want the upstream's %d", len(got), err, len(want))
		}
	}
}

// withCA writes the upstream's certificate into the workspace as ca.pem.
func withCA(b *egressBench, u *upstream) {
	b.write(map[string]string{"ca.pem": string(u.CA)})
}

// sniScript fetches /blob over TLS through the proxy by hand: CONNECT
// to argv[1], then a TLS session whose hello names example.com (the
// upstream's certificate covers it), trusting ca.pem; it writes the body
// to got.
const sniScript = `import os, socket, ssl, sys
from urllib.parse import urlsplit
proxy = urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((proxy.hostname, proxy.port))
s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (sys.argv[1].encode(), sys.argv[1].encode()))
head = b""
while not head.endswith(b"\r\n\r\n"):
    c = s.recv(1)
    if not c:
        sys.exit("the proxy closed: %r" % head)
    head += c
if head.split()[1] != b"200":
    sys.exit(head.decode())
t = ssl.create_default_context(cafile="ca.pem").wrap_socket(s, server_hostname="example.com")
t.sendall(b"GET /blob HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
data = b""
while True:
    c = t.recv(1 << 16)
    if not c:
        break
    data += c
open("got", "wb").write(data.split(b"\r\n\r\n", 1)[1])
`

var egressClients = []egressClient{
	{"curl-http", false, true, func(b *egressBench, u *upstream, mark string) ([]string, func()) {
		want := blobFixture(b.t, u, 1<<20, mark)
		return []string{"curl", "-sS", "--fail", "-o", "got", u.URL + "/blob"}, fetchedBlob(b.t, b.ws, want)
	}},
	{"curl-https", true, true, func(b *egressBench, u *upstream, mark string) ([]string, func()) {
		want := blobFixture(b.t, u, 1<<20, mark)
		withCA(b, u)
		return []string{"curl", "-sS", "--fail", "--cacert", "ca.pem", "-o", "got", u.URL + "/blob"}, fetchedBlob(b.t, b.ws, want)
	}},
	{"python-urllib", false, true, func(b *egressBench, u *upstream, mark string) ([]string, func()) {
		want := blobFixture(b.t, u, 1<<20, mark)
		return []string{python(b.t), "-c", "import sys, urllib.request\nopen('got', 'wb').write(urllib.request.urlopen(sys.argv[1]).read())",
			u.URL + "/blob"}, fetchedBlob(b.t, b.ws, want)
	}},
	{"python-tls-sni", true, false, func(b *egressBench, u *upstream, mark string) ([]string, func()) {
		want := blobFixture(b.t, u, 64<<10, mark)
		withCA(b, u)
		return []string{python(b.t), "-c", sniScript, u.Entry}, fetchedBlob(b.t, b.ws, want)
	}},
	{"git-clone", false, true, func(b *egressBench, u *upstream, mark string) ([]string, func()) {
		gitFixture(b.t, u, mark)
		return []string{"git", "clone", "-q", u.URL + "/repo.git", "clone"}, func() {
			if got := hostRun(b.t, b.ws, gitHostEnv, lookPath(b.t, "git"), "-c", "safe.directory=*", "-C", "clone", "cat-file", "-p", "HEAD:README"); got != mark+"\n" {
				b.t.Fatalf("host: the clone's README is %q, want the mark", got)
			}
		}
	}},
	{"npm-install", false, false, func(b *egressBench, u *upstream, mark string) ([]string, func()) {
		lookPath(b.t, "node")
		lookPath(b.t, "npm")
		b.write(npmRegistry(b.t, u, mark))
		return []string{"npm", "install"}, func() { npmInstalled(b, mark) }
	}},
	{"pip-install", true, false, func(b *egressBench, u *upstream, mark string) ([]string, func()) {
		needPip(b.t)
		module := pipIndex(b.t, u, mark)
		withCA(b, u)
		return []string{python(b.t), "-m", "pip", "install", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",
				"--target", "site", "--index-url", u.URL + "/simple/", "--cert", "ca.pem", pipPackage}, func() {
				if got := readHost(b.t, filepath.Join(b.ws, "site", "egress_fixture", "__init__.py")); got != module {
					b.t.Fatalf("host: the installed module is %q, want %q", got, module)
				}
			}
	}},
}

// npmInstalled requires the installed package's index.js to export the
// mark, and the lock file to resolve it from the upstream.
func npmInstalled(b *egressBench, mark string) {
	b.t.Helper()
	if got := readHost(b.t, filepath.Join(b.ws, "node_modules", npmPackage, "index.js")); got != fmt.Sprintf("module.exports = %q;\n", mark) {
		b.t.Fatalf("host: node_modules/%s/index.js is %q", npmPackage, got)
	}
	if lock := readHost(b.t, filepath.Join(b.ws, "package-lock.json")); !strings.Contains(lock, "/tarballs/"+npmPackage+"-1.0.0.tgz") {
		b.t.Fatalf("host: package-lock.json does not resolve %s from the upstream:\n%s", npmPackage, lock)
	}
}

// needPip skips t, saying why, unless python3 on the sanitized PATH has
// pip.
func needPip(t testing.TB) {
	t.Helper()
	if out, err := exec.Command(lookPath(t, "python3"), "-m", "pip", "--version").CombinedOutput(); err != nil {
		t.Skipf("skip: python3 on %s has no pip: %v %s", "the sanitized PATH", err, out)
	}
}

func TestEgressClientsThroughTheProxy(t *testing.T) { egressClientsRun(t, rootEgressBench, false) }

func TestEgressClientsThroughTheProxyAsUser(t *testing.T) { egressClientsRun(t, userEgressBench, true) }

// egressClientsRun runs each client (the core ones only, as uid 65534) in
// a fresh workspace against a fresh upstream granted by its literal
// address: it must exit 0, the host must read back what it fetched, and
// --json, the receipt and `receipts show` must list the upstream's
// connections with its byte counts.
func egressClientsRun(t *testing.T, bench func(*testing.T) *egressBench, coreOnly bool) {
	for _, c := range egressClients {
		if coreOnly && !c.core {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			b := bench(t)
			u := startUpstream(t, c.https)
			mark := token(t)
			argv, check := c.setup(b, u, mark)
			b.ready()
			j := b.run([]string{u.Entry}, argv...).ok(t)
			check()
			b.requireEvidence(j, u)
			// The record's server names equal the upstream's log (above).
			if eg := j.egress(); c.name == "python-tls-sni" && (eg == nil || !slices.ContainsFunc(eg.Conns, func(c egressConn) bool { return c.SNI == "example.com" })) {
				t.Errorf("--json records no connection whose hello named example.com: %+v", eg)
			}
		})
	}
}

// TestEgressNpmCi: `npm install` through the proxy writes the lock
// file; `npm ci` from it, in a fresh action with an empty cache, fetches
// the tarball the lock resolves through the proxy again, each run's
// connections counted.
func TestEgressNpmCi(t *testing.T) {
	lookPath(t, "node")
	lookPath(t, "npm")
	b := rootEgressBench(t)
	u := startUpstream(t, false)
	mark := token(t)
	b.write(npmRegistry(t, u, mark))
	grant := []string{u.Entry}
	j := b.run(grant, "npm", "install").ok(t)
	b.requireEvidence(j, u)
	if err := os.RemoveAll(filepath.Join(b.ws, "node_modules")); err != nil {
		t.Fatal(err)
	}
	// An empty cache, as on a fresh checkout: the tarball is fetched.
	j = b.run(grant, "npm", "ci", "--cache", "ci-cache").ok(t)
	npmInstalled(b, mark)
	b.requireEvidence(j, u)
}

// egressRefusal is one attempt off the lease: the grant, the attempt, and
// what the run must show.
type egressRefusal struct {
	name  string
	grant []string
	argv  []string
	// failed is what the target prints when the attempt fails.
	failed string
	// check reads the run's --json and `broker run`'s text.
	check func(t *testing.T, j *egressRun, text string)
}

func TestEgressRefusedOffTheLease(t *testing.T) { egressRefused(t, rootEgressBench(t)) }

func TestEgressRefusedOffTheLeaseAsUser(t *testing.T) { egressRefused(t, userEgressBench(t)) }

// egressRefused: each attempt off the lease is made for real, with a
// listener or UDP socket of the test's at the place it aims for; the
// attempt fails, nothing arrives there, and the run (--json, the
// receipt, `broker run`'s text) names the refusal.
func egressRefused(t *testing.T, b *egressBench) {
	granted := listen(t, "tcp4", "127.0.0.1:0") // granted, reached only through the proxy
	other := listen(t, "tcp4", "127.0.0.1:0")   // never granted
	udp, dns := quietUDP(t), quietUDP(t)
	dnsTCP := listen(t, "tcp4", "127.0.0.1:0")
	lease := []string{fmt.Sprintf("127.0.0.1:%d", portOf(granted))}
	otherEntry := fmt.Sprintf("127.0.0.1:%d", portOf(other))
	d := func(v int) string { return fmt.Sprint(v) }
	py := python(t)
	// A call the sandbox refused, in --json (its object starting with
	// object) and in broker run's text.
	sandboxRefused := func(call, rule, object string) func(*testing.T, *egressRun, string) {
		return func(t *testing.T, j *egressRun, text string) {
			if !slices.ContainsFunc(append(j.Denials, j.RoutineDenials...), func(s shownDenial) bool {
				return s.Call == call && s.Rule == rule && strings.HasPrefix(s.Object, object)
			}) {
				t.Errorf("--json does not list %s refused (%s, %s): %+v %+v", call, rule, object, j.Denials, j.RoutineDenials)
			}
			if !strings.Contains(text, "the sandbox refused") || !strings.Contains(text, call+" "+object) && !strings.Contains(text, call+"("+object) {
				t.Errorf("broker run does not name the refused %s %s:\n%s", call, object, text)
			}
		}
	}
	// The proxy's 403 names the lease and the refused destination; curl
	// -D - prints its head and body.
	proxyRefused := func(host string, port int) func(*testing.T, *egressRun, string) {
		return func(t *testing.T, j *egressRun, text string) {
			dest := fmt.Sprintf("%s:%d", host, port)
			if !strings.Contains(j.Stdout.Text, " 403") || !strings.Contains(strings.ToLower(j.Stdout.Text), "x-warrant-refused:") ||
				!strings.Contains(j.Stdout.Text, dest) || !strings.Contains(j.Stdout.Text, lease[0]) {
				t.Errorf("the proxy's answer does not refuse %s naming the lease %s:\n%s", dest, lease[0], j.Stdout.Text)
			}
			requireRefusedRecord(t, b, j, host, port)
			sandboxRefused("connect", "not-on-egress-lease", dest)(t, j, text)
		}
	}
	tunnelRefused := func(t *testing.T, j *egressRun, text string) {
		if !strings.Contains(j.Stderr.Text, "403") {
			t.Errorf("curl does not say the proxy refused the tunnel (403):\n%s", j.Stderr.Text)
		}
		requireRefusedRecord(t, b, j, "127.0.0.1", portOf(other))
		sandboxRefused("connect", "not-on-egress-lease", otherEntry)(t, j, text)
	}
	// Without a lease: today's refusal, which says how to ask for one.
	noLease := func(t *testing.T, j *egressRun, text string) {
		sandboxRefused("socket", "no-network", "AF_INET SOCK_STREAM")(t, j, text)
		if !strings.Contains(text, "--egress HOST:PORT") {
			t.Errorf("broker run does not say how to ask for network access:\n%s", text)
		}
		if j.View != nil {
			t.Errorf("a run without a lease has an egress record: %+v", j.View)
		}
	}
	cases := []egressRefusal{
		{"no lease, curl", nil, []string{"curl", "-sS", fmt.Sprintf("http://127.0.0.1:%d/", portOf(granted))}, "curl: (7)", noLease},
		{"no lease, python", nil, []string{py, "-c", "import sys, urllib.request; urllib.request.urlopen(sys.argv[1])",
			fmt.Sprintf("http://127.0.0.1:%d/", portOf(granted))}, "Operation not permitted", noLease},
		{"another port through the proxy", lease, []string{"curl", "-sS", "-D", "-", fmt.Sprintf("http://%s/", otherEntry)}, " 403",
			proxyRefused("127.0.0.1", portOf(other))},
		{"another port, a tunnel", lease, []string{"curl", "-sS", fmt.Sprintf("https://%s/", otherEntry)}, "403", tunnelRefused},
		{"a name off the lease", lease, []string{"curl", "-sS", "-D", "-", "http://registry.example.com/"}, " 403",
			func(t *testing.T, j *egressRun, text string) {
				proxyRefused("registry.example.com", 80)(t, j, text)
				if c := refusedConnection(j.egress(), "registry.example.com", 80); c != nil && c.Address != "" {
					t.Errorf("the proxy resolved a name off the lease: %+v", c)
				}
			}},
		{"the granted address directly, curl", lease, []string{"curl", "-sS", "--noproxy", "*", fmt.Sprintf("http://%s/", lease[0])}, "curl: (7)",
			sandboxRefused("connect", "not-through-proxy", lease[0])},
		{"the granted address directly, connect", lease, []string{b.helper, "socket", d(unix.AF_INET), d(unix.SOCK_STREAM), "0", d(portOf(granted))}, "errno EACCES",
			sandboxRefused("connect", "not-through-proxy", lease[0])},
		{"another port directly", lease, []string{b.helper, "socket", d(unix.AF_INET), d(unix.SOCK_STREAM), "0", d(portOf(other))}, "errno EACCES",
			sandboxRefused("connect", "not-through-proxy", otherEntry)},
		{"udp", lease, []string{py, "-c", "import socket, sys; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', int(sys.argv[1])))", udpPort(udp)}, "Operation not permitted",
			sandboxRefused("socket", "no-network", "AF_INET SOCK_DGRAM")},
		{"dns over udp", lease, []string{py, "-c", dnsScript, "udp", udpPort(dns)}, "Operation not permitted", sandboxRefused("socket", "no-network", "AF_INET SOCK_DGRAM")},
		{"dns over tcp", lease, []string{py, "-c", dnsScript, "tcp", d(portOf(dnsTCP))}, "Permission denied",
			sandboxRefused("connect", "not-through-proxy", fmt.Sprintf("127.0.0.1:%d", portOf(dnsTCP)))},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(strings.ReplaceAll(c.name, " ", "_"), ",", ""), func(t *testing.T) {
			b.t = t
			j := b.run(c.grant, c.argv...)
			if saw := j.Stdout.Text + j.Stderr.Text; !strings.Contains(saw, c.failed) {
				t.Errorf("the target did not see the attempt fail (%q):\n%s", c.failed, saw)
			}
			text := b.text(c.grant, c.argv...)
			for _, only := range []string{"Could not resolve host", "Temporary failure in name resolution"} {
				if strings.Contains(text, only) && !strings.Contains(text, "refused") {
					t.Errorf("broker run says only %q:\n%s", only, text)
				}
			}
			c.check(t, j, text)
			requireNoConnection(t, granted)
			requireNoConnection(t, other)
			requireNoConnection(t, dnsTCP)
			requireNoDatagram(t, udp)
			requireNoDatagram(t, dns)
		})
	}
	b.t = t
}

// requireRefusedRecord requires --json and the receipt to record the
// refused connection to host:port, with a reason and no address (the
// proxy connected nowhere).
func requireRefusedRecord(t *testing.T, b *egressBench, j *egressRun, host string, port int) {
	t.Helper()
	rc, text := b.receipt(*j.ReceiptID)
	for where, eg := range map[string]*egressRecord{"--json": j.egress(), "the receipt": rc} {
		c := refusedConnection(eg, host, port)
		if c == nil || c.Reason == "" || c.Address != "" || c.Up != 0 || c.Down != 0 || eg.Refused == 0 {
			t.Errorf("%s does not record the refused connection to %s:%d: %+v", where, host, port, eg)
		}
	}
	if !strings.Contains(text, fmt.Sprintf("%s:%d", host, port)) {
		t.Errorf("receipts show does not name the refused %s:%d:\n%s", host, port, text)
	}
}

// dnsScript sends a DNS query for registry.example.com (A) to 127.0.0.1
// on port argv[2] over argv[1] (udp, or tcp with its length prefix) and
// says what became of it.
const dnsScript = `import socket, struct, sys
q = struct.pack(">HHHHHH", 0x4711, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l for l in b"registry.example.com".split(b".")) + b"\0" + struct.pack(">HH", 1, 1)
if sys.argv[1] == "udp":
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(q, ("127.0.0.1", int(sys.argv[2])))
else:
    socket.create_connection(("127.0.0.1", int(sys.argv[2]))).sendall(struct.pack(">H", len(q)) + q)
print("sent")
`

// TestEgressMCPRun: an agent proposes the upstream through the MCP run
// tool's egress; the approval it gets names the exact entry; once a
// person approves it, the program fetches through the proxy, and the
// result carries the connection with the upstream's byte counts.
func TestEgressMCPRun(t *testing.T) {
	lookPath(t, "curl")
	d := shared(t)
	a := d.newAgent(t)
	u := startUpstream(t, false)
	want := blobFixture(t, u, 64<<10, token(t))
	c := startGo(t, mcpServer(d.State, a.WS), "", nil)
	args := map[string]any{"executable": "curl", "argv": []string{"-sS", "--fail", "-o", "got", u.URL + "/blob"}, "egress": []string{u.Entry}}
	r := c.call("run", args)
	got := r.succeeded(t, "run", args)
	if got.State != "approval_required" || got.Approval == nil || !strings.Contains(r.text(), u.Entry) {
		t.Fatalf("a run proposing egress: %+v\n%s", got, r.text())
	}
	approve(t, d, got.Approval.RequestID, 1)
	got = c.action("wait", map[string]any{"approval_id": got.Approval.RequestID})
	for deadline := time.Now().Add(daemonSafety); got.State != "terminal"; got = c.action("wait", map[string]any{"handle": *got.Handle}) {
		if got.Handle == nil || time.Now().After(deadline) {
			t.Fatalf("the approved run: %+v", got)
		}
	}
	if res := got.Result; res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("the approved run: %+v", res)
	}
	fetchedBlob(t, a.WS, want)()
	u.requireCounted(u.take(), viewRecord(got.Result.Egress), "the MCP result")
}
