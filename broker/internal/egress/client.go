package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"warrant/wire"
)

// notProxy is the header value and reason of a request the proxy does not
// serve at all; it has no rule in wire.DenialRule, since it names no
// destination.
const notProxy = "not-a-proxy-request"

// client is one admitted connection from an action.
type client struct {
	s    *Session
	conn *net.TCPConn
	in   *meter // bounds a request head
	br   *bufio.Reader
	up   *upstream // the plain-HTTP upstream in use, if any
}

// run serves the client's requests until one ends the connection.
func (c *client) run() {
	for {
		req, err := c.head()
		switch {
		case errors.Is(err, io.EOF):
			return // closed or idle before a byte: it asked for nothing
		case err != nil:
			c.refuse(c.s.begin("", 0, -1), "", 0, "not an HTTP proxy request: "+err.Error())
			return
		case req.Method == http.MethodConnect:
			c.release()
			c.tunnel(req)
			return
		case req.URL.IsAbs() && req.URL.Scheme == "http" && req.URL.Opaque == "":
			if !c.forward(req) {
				return
			}
		default:
			c.refuse(c.s.begin("", 0, -1), "", 0, "not an HTTP proxy request: neither CONNECT nor an absolute http:// URL")
			return
		}
	}
}

// head reads a request's line and headers: at most maxHead bytes, within
// headTimeout. A connection that ends or idles before its first byte
// gives io.EOF.
func (c *client) head() (*http.Request, error) {
	pending := c.br.Buffered() // read ahead with the previous request: this head's first bytes, or all of it
	c.in.budget = maxHead - int64(pending)
	c.conn.SetReadDeadline(time.Now().Add(headTimeout))
	req, err := http.ReadRequest(c.br)
	c.conn.SetReadDeadline(time.Time{})
	left := c.in.budget
	c.in.budget = unlimited
	switch {
	case err == nil:
		return req, nil
	case pending == 0 && left == maxHead:
		return nil, io.EOF
	case left <= 0:
		return nil, fmt.Errorf("request head longer than %d bytes", maxHead)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fmt.Errorf("no complete request head within %v", headTimeout)
	}
	return nil, errors.New("malformed request head")
}

// destination parses the authority a request named (host:port) for its
// record: the canonical entry, or "" if it is not one.
func destination(authority string) (entry, host string, port uint16) {
	entry, err := wire.ParseEgressEntry(authority)
	if err != nil {
		return "", recorded(authority, maxRecorded), 0
	}
	host, port, _ = wire.SplitEgressEntry(entry)
	return entry, host, port
}

// check begins the attempt a request for authority is: refused unless it
// names a granted entry.
func (c *client) check(authority string) (*attempt, string, bool) {
	entry, host, port := destination(authority)
	i := -1
	if entry != "" {
		i = c.s.grant(entry)
	}
	a := c.s.begin(host, port, i)
	if i < 0 {
		c.refuse(a, authority, wire.RuleNotOnLease, "not on the egress grant")
		return nil, "", false
	}
	return a, entry, true
}

// dial connects an allowed attempt to its entry; on failure it answers
// the client, ends the attempt and returns nil.
func (c *client) dial(a *attempt, entry string) *net.TCPConn {
	conn, addr, ref, err := c.s.p.connect(c.s.ctx, entry)
	switch {
	case ref != nil:
		c.refuse(a, entry, ref.rule, ref.reason)
		return nil
	case err != nil:
		a.rec.Reason = err.Error()
		c.s.end(a)
		c.answer("502 Bad Gateway", "", fmt.Sprintf("warrant's egress proxy could not reach %s for lease %s: %v\n", entry, c.s.lease, err))
		return nil
	case !c.s.track(conn):
		a.rec.Reason = "the action ended"
		c.s.end(a)
		return nil
	}
	a.rec.Address = addr.Addr().String()
	a.rec.Allowed = true
	return conn
}

// refuse ends a refused attempt: its record, the denial for a rule, and
// a 403 to the client, which is its last answer. object is the
// destination the client named ("" for none).
func (c *client) refuse(a *attempt, object string, rule wire.DenialRule, reason string) {
	a.rec.Reason = reason
	c.s.end(a)
	name := notProxy
	if rule != 0 {
		name = rule.String()
		if c.s.refused != nil {
			c.s.refused(wire.Denial{Effect: wire.EffectConnect, Call: "connect", Object: object, Rule: rule,
				Source: wire.SourceBroker, Count: 1}, time.Unix(0, a.rec.Start))
		}
	}
	var body strings.Builder
	fmt.Fprintf(&body, "warrant's egress proxy refused this request of lease %s.\n", c.s.lease)
	if object != "" {
		fmt.Fprintf(&body, "Destination: %s\n", wire.DenialObject(object))
	}
	fmt.Fprintf(&body, "Rule: %s (%s)\n", name, reason)
	if len(c.s.granted) == 0 {
		body.WriteString("The lease grants no destination.\n")
	} else {
		fmt.Fprintf(&body, "The lease grants: %s\n", strings.Join(c.s.granted, ", "))
	}
	c.answer("403 Forbidden", name, body.String())
}

// answer writes the proxy's own last response to the client and lets it
// read it: the write side is shut and what the client still sends is
// read and dropped for a moment, since closing a socket with unread
// bytes resets it, and a reset can destroy the response at the client
// before it is read.
func (c *client) answer(status, refused, body string) {
	var h strings.Builder
	fmt.Fprintf(&h, "HTTP/1.1 %s\r\n", status)
	if refused != "" {
		fmt.Fprintf(&h, "X-Warrant-Refused: %s\r\n", refused)
	}
	fmt.Fprintf(&h, "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	c.conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c.conn, h.String()); err == nil && c.conn.CloseWrite() == nil {
		io.Copy(io.Discard, io.LimitReader(c.conn, 64<<10))
	}
}

// maxRecorded is wire's cap on a record's host and SNI
// (wire.Egress.Validate).
const maxRecorded = 256

// recorded is text a client sent as a record holds it: wire.DenialObject's
// escapes (valid UTF-8, no control bytes), then cut to at most max bytes
// at a character's boundary, "…" marking the cut.
func recorded(s string, max int) string {
	s = wire.DenialObject(s)
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
