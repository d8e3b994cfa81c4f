package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// benchSize is what each download moves.
const benchSize = 1 << 30

// BenchmarkProxyThroughput downloads 1 GiB from a local origin directly
// and through a CONNECT tunnel of the proxy, in the same run, with a Go
// reader and (if it is installed) with curl, and reports both rates and
// their ratio (the goal is at least 0.8):
//
//	go test -run '^$' -bench ProxyThroughput -benchtime 3x ./broker/internal/egress
func BenchmarkProxyThroughput(b *testing.B) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go serveBytes(ln)
	p, err := Listen()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	s := p.Open("bench", []string{ln.Addr().String()}, nil)
	defer s.Close()
	origin := ln.Addr().String()

	b.Run("client=go", func(b *testing.B) {
		buf := make([]byte, 1<<20)
		measure(b, func() {
			c, err := net.Dial("tcp4", origin)
			if err != nil {
				b.Fatal(err)
			}
			download(b, c, c, buf)
		}, func() {
			c, err := admittedDialer(s).Dial("tcp4", s.Proxy().String())
			if err != nil {
				b.Fatal(err)
			}
			io.WriteString(c, "CONNECT "+origin+" HTTP/1.1\r\n\r\n")
			br := bufio.NewReaderSize(c, 1<<20)
			if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
				b.Fatal(resp, err)
			}
			download(b, c, br, buf)
		})
	})
	b.Run("client=curl", func(b *testing.B) {
		if _, err := exec.LookPath("curl"); err != nil {
			b.Skip("no curl")
		}
		url := "http://" + origin + "/"
		measure(b, func() {
			curl(b, url)
		}, func() {
			// curl binds the port the broker would have bound for it.
			l, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			local := l.Addr().(*net.TCPAddr).AddrPort()
			l.Close()
			s.Admit(local)
			curl(b, url, "--local-port", fmt.Sprint(local.Port()), "--proxytunnel", "--proxy", "http://"+s.Proxy().String())
		})
	})
}

// measure times direct and proxied downloads, one each per iteration,
// and reports their rates and ratio.
func measure(b *testing.B, direct, proxied func()) {
	var td, tp time.Duration
	for b.Loop() {
		start := time.Now()
		direct()
		td += time.Since(start)
		start = time.Now()
		proxied()
		tp += time.Since(start)
	}
	mb := float64(b.N) * benchSize / 1e6
	b.ReportMetric(mb/td.Seconds(), "direct-MB/s")
	b.ReportMetric(mb/tp.Seconds(), "proxy-MB/s")
	b.ReportMetric(td.Seconds()/tp.Seconds(), "ratio")
	b.ReportMetric(0, "ns/op")
}

// serveBytes answers each connection's request head with benchSize
// bytes, then closes it.
func serveBytes(ln net.Listener) {
	chunk := make([]byte, 1<<20)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
				return
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", benchSize)
			for left := benchSize; left > 0; left -= len(chunk) {
				if _, err := c.Write(chunk[:min(left, len(chunk))]); err != nil {
					return
				}
			}
		}()
	}
}

// download asks for the bytes on c, reads r to its end and checks the
// body was benchSize bytes.
func download(b *testing.B, c net.Conn, r io.Reader, buf []byte) {
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: origin\r\n\r\n")
	var n int
	for {
		m, err := r.Read(buf)
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if n < benchSize {
		b.Fatalf("read %d bytes, want %d and a head", n, benchSize)
	}
}

// curl downloads url with curl and checks the size.
func curl(b *testing.B, url string, args ...string) {
	out, err := exec.Command("curl", append([]string{"-sS", "-o", "/dev/null", "-w", "%{size_download}", url}, args...)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(benchSize) {
		b.Fatalf("curl %v: %s %v", args, out, err)
	}
}
