package broker

import (
	"context"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"warrant/broker/internal/egress"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/broker/view/receiptview"
	"warrant/receipt"
	"warrant/wire"
)

// egressExec records the proxy, lease and spawn request port each launch
// is handed, then holds it (holdExecutor), or refuses it with fail.
type egressExec struct {
	holdExecutor
	mu      sync.Mutex
	proxies []*egress.Proxy
	leases  []string
	ports   []uint16
	fail    error
}

func (e *egressExec) Start(ctx context.Context, l *runner.Launch, o runner.Observer) error {
	e.mu.Lock()
	e.proxies, e.leases = append(e.proxies, l.Egress), append(e.leases, l.Lease)
	e.ports = append(e.ports, runner.SpawnRequest(l).EgressPort)
	fail := e.fail
	e.mu.Unlock()
	if fail != nil {
		l.Close()
		return fail
	}
	return e.holdExecutor.Start(ctx, l, o)
}

// The broker has one egress proxy: it listens from the first action with
// a grant, every such action is handed it with the lease that carries
// the grant, an action without one is handed none, and it is closed with
// the broker.
func TestEgressProxyIsTheBrokers(t *testing.T) {
	var addr netip.AddrPort
	t.Cleanup(func() { // after the rig's broker is closed
		if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
			c.Close()
			t.Errorf("the proxy %s still listens after the broker closed", addr)
		}
	})
	e := &egressExec{}
	r := newRig(t, func(c *Config) { c.Executor = e })
	if r.b.egress.proxy != nil {
		t.Fatal("the proxy listens before any action asked for it")
	}
	_, plainLease := r.approved(r.request("plain"), 1)
	r.wantAccepted(r.request("plain"))
	if r.b.egress.proxy != nil || e.proxies[0] != nil || e.ports[0] != 0 || e.leases[0] != "" {
		t.Fatalf("an action without a grant: proxy %v, port %d, lease %q (lease %s)", e.proxies[0], e.ports[0], e.leases[0], plainLease.ID)
	}
	req := r.egressRequest("127.0.0.1:4873")
	_, l := r.approved(req, 2)
	r.wantAccepted(req)
	r.wantAccepted(req)
	p := r.b.egress.proxy
	if p == nil || e.proxies[1] != p || e.proxies[2] != p || e.leases[1] != l.ID || e.leases[2] != l.ID ||
		e.ports[1] != p.Addr().Port() || e.ports[2] != p.Addr().Port() {
		t.Fatalf("actions with a grant: proxies %v (the broker's %v), leases %q (want %s), ports %v", e.proxies, p, e.leases, l.ID, e.ports)
	}
	addr = p.Addr()
	c, err := net.DialTimeout("tcp", addr.String(), time.Second)
	if err != nil {
		t.Fatalf("the proxy does not listen: %v", err)
	}
	c.Close()
}

// The receipt of an action with a grant that was not started says the
// grant, with nothing counted; one without a grant says nothing of
// egress.
func TestEgressGrantInAnUnstartedReceipt(t *testing.T) {
	e := &egressExec{fail: wire.Errorf(wire.CodeSandboxUnavailable, "refused for the test")}
	r := newRig(t, func(c *Config) { c.Executor = e })
	req := r.egressRequest("127.0.0.1:4873")
	r.approved(req, 1)
	with := r.wantAccepted(req)
	r.approved(r.request("plain"), 1)
	without := r.wantAccepted(r.request("plain"))
	log, err := ReadReceiptLog(context.Background(), r.state)
	must(t, err)
	if rep := log.Verify(); !rep.OK() {
		t.Fatalf("%+v", rep)
	}
	got := map[string]*receipt.Receipt{}
	for _, en := range log.Entries {
		if o := receiptview.OpenEntry(en); o.Receipt != nil {
			got[o.Receipt.Action] = o.Receipt
		}
	}
	if rc := got[with]; rc == nil || rc.Outcome != wire.KnownNotExecuted ||
		!reflect.DeepEqual(rc.Egress, &receipt.Egress{Granted: []string{"127.0.0.1:4873"}}) {
		t.Fatalf("the receipt of the action with a grant: %+v", rc)
	}
	if rc := got[without]; rc == nil || rc.Egress != nil {
		t.Fatalf("the receipt of the action without: %+v", rc)
	}
}

// The receipt of a started action carries what its session recorded, on
// the receipt clocks; one that did not start keeps the grant alone.
func TestEgressObservedReceipt(t *testing.T) {
	r := newRig(t)
	req := r.egressRequest("127.0.0.1:4873")
	r.approved(req, 1)
	handle := r.wantAccepted(req)
	now := time.Now()
	seen := &wire.Egress{Granted: []string{"127.0.0.1:4873"}, Total: 1,
		Totals: []wire.EgressTotal{{Entry: "127.0.0.1:4873", Connections: 1, Up: 78, Down: 1 << 20}},
		Connections: []wire.EgressConnection{{Host: "127.0.0.1", Port: 4873, Address: "127.0.0.1", Up: 78, Down: 1 << 20,
			Start: now.UnixNano(), End: now.Add(time.Second).UnixNano(), Allowed: true}}}
	run := &lifecycle.Result{Outcome: wire.Exited, Ready: &wire.Ready{SeccompDigest: make([]byte, 32)}, Started: now, Egress: seen}
	rc, err := r.b.observedReceipt(context.Background(), handle, nil, &runner.Observation{Result: &wire.Result{}, Run: run})
	must(t, err)
	if want := receipt.EgressOf(seen, r.b.Stamp); !reflect.DeepEqual(rc.Egress, want) || rc.Egress.Connections[0].End.MonoNs-rc.Egress.Connections[0].Start.MonoNs != int64(time.Second) {
		t.Fatalf("started: egress %+v, want %+v", rc.Egress, want)
	}
	run.Started = time.Time{}
	rc, err = r.b.observedReceipt(context.Background(), handle, nil, &runner.Observation{Result: &wire.Result{}, Run: run})
	must(t, err)
	if rc.Egress == nil || !slices.Equal(rc.Egress.Granted, seen.Granted) || rc.Egress.Total != 0 || rc.Egress.Connections != nil {
		t.Fatalf("not started: egress %+v, want the grant alone", rc.Egress)
	}
}
