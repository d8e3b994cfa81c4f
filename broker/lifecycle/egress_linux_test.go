package lifecycle

import (
	"slices"
	"testing"
	"time"

	"warrant/broker/internal/egress"
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
