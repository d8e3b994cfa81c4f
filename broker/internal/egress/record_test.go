package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestRecordedTextValidates: what a client names (a CONNECT authority of
// multi-byte characters, a ClientHello's server name of control bytes)
// is recorded escaped and cut at a character, within wire's cap, so that
// the session's record passes wire validation and a receipt holds it.
func TestRecordedTextValidates(t *testing.T) {
	o, _, _ := newOrigin(t, true)
	p := newProxy(t)
	s := p.Open("lease-r", []string{o.entry()}, nil)

	authority := strings.Repeat("é", 150) + ":443"
	c := dial(t, s)
	if resp, _ := connectTo(t, c, authority); resp.StatusCode != 403 {
		t.Errorf("CONNECT %.20q…: %s", authority, resp.Status)
	}
	c.Close()

	c = dial(t, s)
	if resp, br := connectTo(t, c, o.entry()); resp.StatusCode != 200 || br.Buffered() != 0 {
		t.Fatalf("CONNECT %s: %s", o.entry(), resp.Status)
	}
	tc := tls.Client(c, &tls.Config{ServerName: strings.Repeat("\x01", 120) + ".example", InsecureSkipVerify: true})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	tc.Handshake() // the origin's certificate does not matter: the ClientHello was sent
	c.Close()
	settle(t, s, nil)

	e := s.Close()
	if err := e.Validate(); err != nil {
		t.Fatalf("the record does not validate: %v", err)
	}
	if len(e.Connections) != 2 {
		t.Fatalf("records %+v", e.Connections)
	}
	host, sni := e.Connections[0].Host, e.Connections[1].SNI
	if !strings.HasPrefix(host, "éé") || !strings.HasSuffix(host, "…") || !strings.HasPrefix(sni, `\x01\x01`) || !strings.HasSuffix(sni, "…") {
		t.Errorf("host %q, sni %q: want the text escaped, cut, and marked cut", host, sni)
	}
}

// TestCloseRecordValidates: Session.Close's record passes wire validation
// even when text in it would not (a recording that missed its escaping):
// the text is replaced, the connection stays recorded.
func TestCloseRecordValidates(t *testing.T) {
	p := newProxy(t)
	s := p.Open("lease-v", []string{"example.com:443"}, nil)
	a := s.begin(strings.Repeat("é", 200)+"\x00\xff", 0, -1)
	a.rec.SNI = strings.Repeat("\x01", 300)
	a.rec.Address = "\xc3"
	a.rec.Reason = strings.Repeat("\xff", 5000)
	s.end(a)
	e := s.Close()
	if err := e.Validate(); err != nil {
		t.Fatalf("Close's record does not validate: %v", err)
	}
	if e.Total != 1 || e.Refused != 1 || len(e.Connections) != 1 {
		t.Fatalf("egress %+v: the connection's record is lost", e)
	}
	if c := e.Connections[0]; !strings.HasPrefix(c.Host, "éé") || !utf8.ValidString(c.Reason) || c.Reason == "" {
		t.Errorf("record %+v", c)
	}
}

// TestHeadLimitCountsTheHead: the 16 KiB bound is on a request head's
// own bytes, whether they came with the previous request (pipelined,
// read ahead) or after it: a second head past the bound is refused.
func TestHeadLimitCountsTheHead(t *testing.T) {
	o, _, _ := newOrigin(t, false)
	p := newProxy(t)
	s := p.Open("lease-h", []string{o.entry()}, nil)
	c := dial(t, s)
	first := fmt.Sprintf("GET http://%s/a HTTP/1.1\r\nHost: %s\r\n\r\n", o.entry(), o.entry())
	second := fmt.Sprintf("GET http://%s/b HTTP/1.1\r\nHost: %s\r\nX: ", o.entry(), o.entry())
	second += strings.Repeat("a", maxHead+1024-len(second)-4) + "\r\n\r\n"
	if _, err := io.WriteString(c, first+second); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	for i, want := range []int{200, 403} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != want {
			t.Errorf("response %d: %s, want %d", i, resp.Status, want)
		}
	}
}

// TestRecordedCut: recorded escapes, then cuts at a character's
// boundary within wire's cap, marking the cut.
func TestRecordedCut(t *testing.T) {
	for _, in := range []string{strings.Repeat("é", 300), strings.Repeat("\x01", 100), strings.Repeat("a", 255) + "€", "\xff\xfe"} {
		out := recorded(in, maxRecorded)
		if len(out) > maxRecorded || !utf8.ValidString(out) || strings.ContainsRune(out, 1) {
			t.Errorf("recorded(%.20q) = %q (%d bytes)", in, out, len(out))
		}
	}
	if got := recorded("registry.npmjs.org", maxRecorded); got != "registry.npmjs.org" {
		t.Errorf("recorded changed a plain name: %q", got)
	}
}
