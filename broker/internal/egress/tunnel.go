package egress

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// tunnel serves a CONNECT request: an allowed one is relayed both ways
// until both sides have finished, or the session closes.
func (c *client) tunnel(req *http.Request) {
	a, entry, ok := c.check(req.RequestURI)
	if !ok {
		return
	}
	up := c.dial(a, entry)
	if up == nil {
		return
	}
	defer func() {
		c.s.drop(up)
		c.s.end(a)
	}()
	if _, err := io.WriteString(c.conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after its request head are its tunnel's first.
	prefix, _ := c.br.Peek(c.br.Buffered())
	down := make(chan int64, 1)
	c.s.wg.Add(1)
	go func() {
		defer c.s.wg.Done()
		n, err := io.Copy(c.conn, up) // splice(2): both are *net.TCPConn
		finish(c.conn, up, err)
		down <- n
	}()
	sni, first := hello(c.conn, prefix)
	n, err := up.Write(first)
	if err == nil {
		var m int64
		m, err = io.Copy(up, c.conn)
		n += int(m)
	}
	finish(up, c.conn, err)
	a.rec.SNI = sni
	a.rec.Up = uint64(n)
	a.rec.Down = uint64(<-down)
}

// finish ends one direction of a tunnel, which copied from src to dst:
// at its end of stream, dst is told there is no more; after an error,
// both connections are closed, which ends the other direction too.
func finish(dst, src *net.TCPConn, err error) {
	if err == nil {
		dst.CloseWrite()
		return
	}
	dst.Close()
	src.Close()
}

// hello reads the client's first bytes in a tunnel, prefix first, and
// returns them with the server name (SNI) they carry if they are a TLS
// ClientHello. crypto/tls parses them: a server handshake over a
// connection that records what it reads and writes nothing stops as
// soon as it has the ClientHello. The read stops at the first bytes that
// are not TLS, at maxHello bytes, or after helloTimeout (a client that
// waits for the server to speak first).
func hello(conn *net.TCPConn, prefix []byte) (string, []byte) {
	r := &recorder{Conn: conn, prefix: prefix}
	var sni string
	srv := tls.Server(r, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sni = h.ServerName
		return nil, errHello
	}})
	conn.SetReadDeadline(time.Now().Add(helloTimeout))
	srv.Handshake()
	conn.SetReadDeadline(time.Time{})
	return recorded(sni, maxRecorded), r.seen
}

var (
	errHello   = errors.New("ClientHello read")
	errNoWrite = errors.New("the proxy only reads a ClientHello")
)

// recorder is a client connection as hello's TLS server sees it: reads
// are recorded (to be sent upstream), writes (a TLS alert) are dropped,
// and closing it does nothing.
type recorder struct {
	net.Conn
	prefix []byte
	seen   []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	if len(r.seen) >= maxHello {
		return 0, errHello
	}
	p = p[:min(len(p), maxHello-len(r.seen))]
	var n int
	var err error
	if len(r.prefix) > 0 {
		n = copy(p, r.prefix)
		r.prefix = r.prefix[n:]
	} else {
		n, err = r.Conn.Read(p)
	}
	r.seen = append(r.seen, p[:n]...)
	return n, err
}

func (r *recorder) Write([]byte) (int, error) { return 0, errNoWrite }
func (r *recorder) Close() error              { return nil }
