//go:build linux

package integration

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkEgressDownload downloads 1 GiB from a local upstream with
// curl through the chain's egress proxy (`broker run --egress` on the
// upstream's literal address) and with the same curl directly on the
// host, in the same loop, the two in turn: over plain HTTP (the proxy
// forwards each request) and over HTTPS (a CONNECT tunnel, trusting the
// upstream's certificate). Both read curl's own figures (its bytes and
// time from the first byte it asked for, without the chain's start),
// which must be the whole file; the proxy's record must count exactly
// what the upstream sent. It reports each speed and the ratio (x-direct,
// goal ≥ 0.8), and the CPU each used a GiB: the daemon's with its
// reaped children's (the proxy, the chain and the sandboxed curl:
// cpu-s/GiB) against the host curl's (direct-cpu-s/GiB); the upstream,
// this process, serves both. The floor of any relay is measured in the
// same loop: the host curl through a bare one (relay-x-direct), two
// io.Copy between the connections (splice(2), as the proxy's), with no
// protocol, grant, count or sandbox. `make bench` runs it three times.
func BenchmarkEgressDownload(b *testing.B) {
	d := startBroker(b, "")
	for _, https := range []bool{false, true} {
		name := map[bool]string{false: "http", true: "https"}[https]
		b.Run(name, func(b *testing.B) { benchDownload(b, d.in(b), https) })
	}
}

func benchDownload(b *testing.B, d *brokerd, https bool) {
	const size = 1 << 30
	eb := egressBenchOf(b, d)
	u := startUpstream(b, https)
	f, err := os.Create(filepath.Join(u.Root, "big")) // sparse: the page cache serves zeros
	if err == nil {
		err = f.Truncate(size)
		f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	curl := lookPath(b, "curl")
	argv := []string{"curl", "-sS", "--fail", "-o", "/dev/null", "-w", "%{size_download} %{time_total}"}
	if https {
		ca := filepath.Join(eb.ws, "ca.pem")
		if err := os.WriteFile(ca, u.CA, 0o644); err != nil {
			b.Fatal(err)
		}
		argv = append(argv, "--cacert", ca)
	}
	argv = append(argv, u.URL+"/big")
	speed := func(out string) float64 {
		var n int64
		var secs float64
		if _, err := fmt.Sscan(out, &n, &secs); err != nil || n != size || secs <= 0 {
			b.Fatalf("curl moved %q, want %d bytes", out, size)
		}
		return size / secs / (1 << 20)
	}
	var chain, direct, relayed float64
	var chainCPU, directCPU time.Duration
	run := func() {
		cpu := d.CPU()
		j := eb.run([]string{u.Entry}, argv...).ok(b)
		chain += speed(j.Stdout.Text)
		b.StopTimer()
		d.Quiet()
		chainCPU += d.CPU() - cpu
		u.requireCounted(u.take(), j.egress(), "broker run --json")
		b.StartTimer()
	}
	onHost := func(extra ...string) (float64, time.Duration) {
		cmd := exec.Command(curl, append(extra, argv[1:]...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("curl on the host %v: %v", extra, err)
		}
		b.StopTimer()
		defer b.StartTimer()
		u.take()
		return speed(string(out)), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	host := func() {
		mibs, cpu := onHost()
		direct += mibs
		directCPU += cpu
	}
	relay := bareRelay(b, u.Entry)
	viaRelay := func() {
		mibs, _ := onHost("--connect-to", u.Entry+":"+relay)
		relayed += mibs
	}
	host() // the first read of the sparse file fills the page cache: neither side pays it timed
	chain, direct, directCPU = 0, 0, 0
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			run()
			host()
			viaRelay()
		} else {
			viaRelay()
			host()
			run()
		}
	}
	b.StopTimer()
	b.ReportMetric(chain/float64(b.N), "MiB/s")
	b.ReportMetric(direct/float64(b.N), "direct-MiB/s")
	b.ReportMetric(chain/direct, "x-direct")
	b.ReportMetric(relayed/direct, "relay-x-direct")
	b.ReportMetric(chainCPU.Seconds()/float64(b.N), "cpu-s/GiB")
	b.ReportMetric(directCPU.Seconds()/float64(b.N), "direct-cpu-s/GiB")
}

// bareRelay listens on 127.0.0.1 and relays each connection to target
// both ways until both ends have finished; it returns its address.
func bareRelay(b *testing.B, target string) string {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	pump := func(dst, src *net.TCPConn) {
		io.Copy(dst, src) // splice(2)
		dst.CloseWrite()
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp4", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				defer up.Close()
				go pump(up.(*net.TCPConn), c.(*net.TCPConn))
				pump(c.(*net.TCPConn), up.(*net.TCPConn))
			}()
		}
	}()
	return l.Addr().String()
}

// connectScript makes argv[3] connections to argv[2] ("HOST:PORT"),
// each closed once usable: directly (argv[1] "direct"), or through the
// proxy HTTP_PROXY names with a CONNECT it waits to see answered
// (argv[1] "proxy"). It prints the nanoseconds the loop took.
const connectScript = `import os, socket, sys, time
from urllib.parse import urlsplit
mode, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
host, port = target.rsplit(":", 1)
req = b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode())
addr = (host, int(port))
if mode == "proxy":
    p = urlsplit(os.environ["HTTP_PROXY"])
    addr = (p.hostname, p.port)
start = time.perf_counter_ns()
for i in range(n):
    s = socket.create_connection(addr)
    if mode == "proxy":
        s.sendall(req)
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            c = s.recv(4096)
            if not c:
                sys.exit("the proxy closed: %r" % head)
            head += c
        if head.split()[1] != b"200":
            sys.exit(head.decode())
    s.close()
print(time.perf_counter_ns() - start)
`

// BenchmarkEgressConnect is the cost a connection through the egress
// path adds: a target makes 1,000 connections to a local upstream
// through the proxy (each connect answered by the broker, then a
// CONNECT the proxy dials and answers) and the same script on the host
// makes 1,000 direct connects, in the same loop. The upstream must see
// every one. It reports each per connection and the difference
// (added-µs/connect).
func BenchmarkEgressConnect(b *testing.B) {
	const n = 1000
	d := startBroker(b, "")
	eb := egressBenchOf(b, d)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	entry := fmt.Sprintf("127.0.0.1:%d", portOf(l))
	py := python(b)
	perConnect := func(out string) float64 {
		ns, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if err != nil {
			b.Fatalf("the connect script printed %q", out)
		}
		return float64(ns) / n / 1e3
	}
	var proxied, direct float64
	b.ResetTimer()
	for range b.N {
		before := accepted.Load()
		j := eb.run([]string{entry}, py, "-c", connectScript, "proxy", entry, strconv.Itoa(n)).ok(b)
		proxied += perConnect(j.Stdout.Text)
		out, err := exec.Command(lookPath(b, "python3"), "-c", connectScript, "direct", entry, strconv.Itoa(n)).Output()
		if err != nil {
			b.Fatalf("the connect script on the host: %v", err)
		}
		direct += perConnect(string(out))
		b.StopTimer()
		if eg := j.egress(); eg == nil || eg.Total != n {
			b.Fatalf("the proxy counted %+v, want %d connections", eg, n)
		}
		for deadline := time.Now().Add(daemonSafety); accepted.Load() < before+2*n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("the upstream accepted %d of the %d connections", accepted.Load()-before, 2*n)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(proxied/float64(b.N), "proxy-µs/connect")
	b.ReportMetric(direct/float64(b.N), "direct-µs/connect")
	b.ReportMetric((proxied-direct)/float64(b.N), "added-µs/connect")
}
