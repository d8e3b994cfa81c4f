package probeprog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// egressProbe makes the egress checks (EgressChecks) as EgressPlanFile
// plans them, a line each; without a plan it prints none, and every
// check fails for want of its line.
func egressProbe() {
	b, err := os.ReadFile(EgressPlanFile)
	var p EgressPlan
	if err == nil {
		p, err = ParseEgressPlan(string(b))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "egress prober:", err)
		return
	}
	body, err := viaProxy(p.Upstream, p.Page)
	say(EgressProber, EgressProxy, err, body)
	_, err = viaProxy(p.Other, p.Page)
	say(EgressProber, EgressOffLease, err, "the proxy connected it")
	loop := [4]byte{127, 0, 0, 1}
	say(EgressProber, EgressDirect, dial(unix.AF_INET, unix.SOCK_STREAM, &unix.SockaddrInet4{Port: p.Upstream, Addr: loop}), "connected")
	say(EgressProber, EgressOtherPort, dial(unix.AF_INET, unix.SOCK_STREAM, &unix.SockaddrInet4{Port: p.Other, Addr: loop}), "connected")
	say(EgressProber, EgressUDP, sendUDP(p.UDP), "sent")
	say(EgressProber, EgressDNS, dnsQuery(p.DNS), "sent")
}

// viaProxy GETs http://127.0.0.1:port/page through the proxy HTTP_PROXY
// names, as a client of a forward proxy does (the absolute URL in the
// request line), and returns the body of a 200.
func viaProxy(port int, page string) (string, error) {
	proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil || proxy.Host == "" {
		return "", fmt.Errorf("no proxy in HTTP_PROXY: %q", os.Getenv("HTTP_PROXY"))
	}
	c, err := net.Dial("tcp4", proxy.Host)
	if err != nil {
		return "", err
	}
	defer c.Close()
	host := "127.0.0.1:" + strconv.Itoa(port)
	if _, err := fmt.Fprintf(c, "GET http://%s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host, page, host); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s %s", resp.Status, resp.Header.Get("X-Warrant-Refused"), bytes.TrimSpace(body))
	}
	return string(body), nil
}

// dnsQuery sends a DNS query for example.com (A) to 127.0.0.1:port.
func dnsQuery(port int) error {
	c, err := net.Dial("udp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	defer c.Close()
	q := binary.BigEndian.AppendUint16(nil, 0x4711)
	q = append(q, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0) // recursion desired, one question
	q = append(q, "\x07example\x03com\x00"...)
	q = append(q, 0, 1, 0, 1) // A, IN
	_, err = c.Write(q)
	return err
}
