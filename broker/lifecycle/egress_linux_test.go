package lifecycle

import (
	"io"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/broker/internal/egress"
	"warrant/broker/internal/metadata"
	"warrant/wire"
)

// An action with an egress grant runs with a session of the proxy whose
// port its request names, and its result says what the session carried
// (here nothing: the fake launcher's target makes no connect the broker
// answers); one without a grant has no egress record.
func TestEgressSessionIsTheActions(t *testing.T) {
	p, err := egress.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	grant := []string{"127.0.0.1:4873", "registry.npmjs.org:443"}
	r := launchWith(t, nil, "exit 0", limits(time.Minute), nil, "sh", func(s *Spec) {
		s.Egress = Egress{Granted: grant, Proxy: p, Lease: "l-1"}
		s.Request.EgressPort = p.Addr().Port()
	})
	if r.res.Outcome != wire.Exited || r.res.Egress == nil || !slices.Equal(r.res.Egress.Granted, grant) || r.res.Egress.Total != 0 {
		t.Fatalf("outcome %s (%v), egress %+v", r.res.Outcome, r.res.Err, r.res.Egress)
	}
	r = launch(t, "exit 0", limits(time.Minute), nil, "sh")
	if r.res.Outcome != wire.Exited || r.res.Egress != nil {
		t.Fatalf("without a grant: outcome %s, egress %+v", r.res.Outcome, r.res.Egress)
	}
}

// A grant without its proxy, a request naming a port the grant's proxy
// does not listen on, and a proxy port without a grant are refused before
// any launcher starts: never a run without its proxy.
func TestEgressMismatchRunsNothing(t *testing.T) {
	p, err := egress.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	grant := []string{"registry.npmjs.org:443"}
	for name, edit := range map[string]func(*Spec){
		"grant without proxy": func(s *Spec) { s.Egress = Egress{Granted: grant} },
		"grant, no port":      func(s *Spec) { s.Egress = Egress{Granted: grant, Proxy: p} },
		"grant, another port": func(s *Spec) {
			s.Egress = Egress{Granted: grant, Proxy: p}
			s.Request.EgressPort = p.Addr().Port() + 1
		},
		"port without grant": func(s *Spec) { s.Egress = Egress{Proxy: p}; s.Request.EgressPort = p.Addr().Port() },
	} {
		r := launchWith(t, nil, "echo ran", limits(time.Minute), nil, "sh", edit)
		if r.res.Outcome != wire.KnownNotExecuted || r.res.Err == nil || r.res.Err.Code != wire.CodeSandboxUnavailable ||
			r.res.Pid != 0 || len(r.events) != 0 || r.stdout.String() != "" || r.res.Egress != nil {
			t.Errorf("%s: outcome %s (%v), pid %d, events %s, stdout %q", name, r.res.Outcome, r.res.Err, r.res.Pid, r.kinds(), r.stdout)
		}
	}
}

// A refusal the proxy makes while the action's session closes (the
// target is gone, its request still being answered) is in the result's
// denials as in its egress record: the metadata server stops first, so
// nothing more is admitted, and the denials are taken once the session
// has closed. The refusal is held until Close has begun (it closed the
// proxy's side of the connection), so it lands after Stop.
func TestEgressLateRefusalKept(t *testing.T) {
	p, err := egress.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	meta, err := metadata.Prepare(-1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	refusing, closing := make(chan struct{}), make(chan struct{})
	s := &supervisor{spec: &Spec{}}
	s.meta, s.metaServed = meta, true
	s.session = p.Open("l-late", []string{"registry.npmjs.org:443"}, func(d wire.Denial, at time.Time) {
		close(refusing)
		<-closing
		meta.Record(d, at)
	})
	s.meta.AllowEgress(s.session)
	var d net.Dialer
	d.Control = func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) {
			if err = unix.Bind(int(fd), &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == nil {
				var sa unix.Sockaddr
				if sa, err = unix.Getsockname(int(fd)); err == nil {
					in := sa.(*unix.SockaddrInet4)
					s.session.Admit(netip.AddrPortFrom(netip.AddrFrom4(in.Addr), uint16(in.Port)))
				}
			}
		})
		return err
	}
	c, err := d.Dial("tcp4", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
	go func() {
		io.Copy(io.Discard, c) // ends when Close closes the proxy's side
		close(closing)
	}()
	<-refusing
	s.stopMetadata()
	if e := s.r.Egress; e == nil || e.Refused != 1 {
		t.Fatalf("egress %+v", e)
	}
	if d := s.r.Denials; d == nil || d.Total != 1 || len(d.Records) != 1 || d.Records[0].Rule != wire.RuleNotOnLease ||
		d.Records[0].Object != "evil.example:443" {
		t.Fatalf("denials %+v: the late refusal is lost", d)
	}
}
