package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
)

// maxResponseHead bounds a response's line and headers from an upstream:
// a granted host, but one the proxy need not trust with its memory.
const maxResponseHead = 1 << 20

// upstream is a plain-HTTP client's connection to one granted entry,
// kept alive across the client's requests to it.
type upstream struct {
	entry string
	conn  *net.TCPConn
	m     *meter // counts the bytes to and from the upstream
	br    *bufio.Reader
	a     *attempt
}

// alive reports whether a kept-alive upstream may carry another
// request: it has not closed, and has sent nothing unasked. It peeks
// without waiting (a read deadline in the past would not reach the
// socket at all).
func (u *upstream) alive() bool {
	if u.br.Buffered() > 0 {
		return false
	}
	rc, err := u.conn.SyscallConn()
	if err != nil {
		return false
	}
	var perr error
	if err := rc.Read(func(fd uintptr) bool {
		_, _, perr = syscall.Recvfrom(int(fd), make([]byte, 1), syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}); err != nil {
		return false
	}
	return errors.Is(perr, syscall.EAGAIN) // nothing to read, and not closed
}

// release closes the client's plain-HTTP upstream, if any, and ends its
// attempt.
func (c *client) release() {
	if c.up == nil {
		return
	}
	c.s.drop(c.up.conn)
	c.up.a.rec.Up, c.up.a.rec.Down = c.up.m.wrote, c.up.m.read
	c.s.end(c.up.a)
	c.up = nil
}

// forward relays an absolute-form request to its granted entry, in
// origin form, and the response back; a request to another entry than
// the last one is another upstream connection and another attempt. It
// returns false when the client's connection is to end.
func (c *client) forward(req *http.Request) bool {
	authority := req.URL.Host
	if req.URL.Port() == "" {
		authority = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	if entry, _, _ := destination(authority); c.up == nil || c.up.entry != entry || !c.up.alive() {
		c.release()
		a, entry, ok := c.check(authority)
		if !ok {
			return false
		}
		conn := c.dial(a, entry)
		if conn == nil {
			return false
		}
		m := &meter{c: conn, budget: unlimited}
		c.up = &upstream{entry: entry, conn: conn, m: m, br: bufio.NewReaderSize(m, 4<<10), a: a}
	}
	originForm(req)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// The client waits for a go-ahead before its body; the proxy
		// gives it, and sends the request with its body in one.
		req.Header.Del("Expect")
		if _, err := c.conn.Write([]byte("HTTP/1.1 100 Continue\r\n\r\n")); err != nil {
			return false
		}
	}
	if err := req.Write(c.up.m); err != nil {
		c.release()
		return false
	}
	resp, err := c.response(req)
	if err != nil {
		entry := c.up.entry
		c.release()
		c.answer("502 Bad Gateway", "", fmt.Sprintf("warrant's egress proxy got no response from %s for lease %s: %v\n", entry, c.s.lease, err))
		return false
	}
	hopByHop(resp.Header)
	err = c.respond(req, resp)
	if err != nil || resp.Close {
		c.release()
	}
	return err == nil && !resp.Close && !req.Close
}

// respond sends resp to the client. A body of known length goes by
// splice(2) from the upstream's socket to the client's once what the
// head's read buffered is sent, counted as it moves; any other body
// through Response.Write.
func (c *client) respond(req *http.Request, resp *http.Response) error {
	n := resp.ContentLength
	if n <= 0 || len(resp.TransferEncoding) > 0 || req.Method == http.MethodHead {
		err := resp.Write(c.conn)
		resp.Body.Close()
		return err
	}
	// resp.Body is left unread and unclosed: its Close would read the
	// body that the splice below moves.
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/%d.%d %03d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.StatusCode,
		strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)+" "))
	resp.Header.Del("Content-Length")
	if err := resp.Header.Write(&head); err != nil {
		return err
	}
	fmt.Fprintf(&head, "Content-Length: %d\r\n", n)
	if resp.Close {
		head.WriteString("Connection: close\r\n")
	}
	head.WriteString("\r\n")
	if _, err := c.conn.Write(head.Bytes()); err != nil {
		return err
	}
	buffered := min(int64(c.up.br.Buffered()), n)
	if _, err := io.CopyN(c.conn, c.up.br, buffered); err != nil {
		return err
	}
	moved, err := io.Copy(c.conn, io.LimitReader(c.up.conn, n-buffered)) // splice(2)
	c.up.m.read += uint64(moved)
	if err == nil && moved < n-buffered {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// response reads the upstream's final response to req: informational
// ones (1xx) are dropped, since the proxy answered Expect itself.
func (c *client) response(req *http.Request) (*http.Response, error) {
	for {
		c.up.m.budget = maxResponseHead
		resp, err := http.ReadResponse(c.up.br, req)
		c.up.m.budget = unlimited
		switch {
		case err != nil:
			return nil, err
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("a protocol switch, which the proxy does not carry")
		case resp.StatusCode >= 200:
			return resp, nil
		}
	}
}

// originForm makes an absolute-form request the one its upstream gets:
// in origin form (Request.Write sends the URL's path and query), without
// the proxy's and the connection's own headers, and without a header the
// client did not send. Its Host is the URL's: http.ReadRequest ignores a
// Host line beside an absolute URL, so the client cannot name another
// host to the upstream than the grant's.
func originForm(req *http.Request) {
	hopByHop(req.Header)
	for k := range req.Header {
		if strings.HasPrefix(k, "Proxy-") {
			delete(req.Header, k)
		}
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Request.Write would add Go's
	}
}

// hopByHop deletes the headers that describe one connection, not the
// message (RFC 9110, section 7.6.1).
func hopByHop(h http.Header) {
	for _, f := range h["Connection"] {
		for name := range strings.SplitSeq(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		h.Del(k)
	}
}
