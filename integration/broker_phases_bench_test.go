//go:build linux

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"warrant/broker"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/internal/probeprog"
	"warrant/receipt"
	"warrant/wire"
)

// phases are the seams of one action's time, in order, each named by
// what ends there.
var phases = []string{
	"submit",    // admission, identity, alias scan, lease match, snapshot, EXECUTING checkpoint, action dirs
	"spawn",     // the action's cgroups, the launcher taken (or started in them), its origin journalled
	"exec",      // the launcher's request, checks, confinement and exec: STARTED journalled
	"group-end", // the target's run and exit, the group confirmed gone, drain, reap, usage, cgroups removed
	"receipt",   // the receipt built, signed, logged and checkpointed with the result; the waiter woken and answered
}

// phased is the real runner with a clock at each seam between the broker
// and its executor.
type phased struct {
	*runner.Runner
	mu sync.Mutex
	at map[string][]time.Time // handle → the time each phase ended
}

func (p *phased) mark(handle string) {
	p.mu.Lock()
	p.at[handle] = append(p.at[handle], time.Now())
	p.mu.Unlock()
}

func (p *phased) Start(ctx context.Context, l *runner.Launch, obs runner.Observer) error {
	p.mark(l.Handle)
	return p.Runner.Start(ctx, l, &phasedObserver{Observer: obs, p: p, handle: l.Handle})
}

type phasedObserver struct {
	runner.Observer
	p      *phased
	handle string
}

func (o *phasedObserver) Launched(origin lifecycle.Origin) error {
	err := o.Observer.Launched(origin)
	o.p.mark(o.handle)
	return err
}

func (o *phasedObserver) Event(e lifecycle.Event) {
	o.Observer.Event(e)
	if e.Kind == receipt.EventStarted {
		o.p.mark(o.handle)
	}
}

func (o *phasedObserver) End(obs *runner.Observation) {
	o.p.mark(o.handle)
	o.Observer.End(obs)
}

// BenchmarkRunTruePhases is BenchmarkRunTrue's chain (an existing lease →
// a terminal state with its receipt sealed, for /bin/true, sealed
// snapshot) driven in this process, without the sockets, with a clock at
// each seam between the broker and its executor: back to back, and with
// 6 ms of nothing before each action (spaced), about the time
// BenchmarkRunTrue's baselines take between two actions, in which the
// next warm launcher must be made. It reports each phase's p50 and p95
// in µs.
func BenchmarkRunTruePhases(b *testing.B) {
	r, err := runner.New(runner.Options{Launcher: bins.launcher, Scope: "phases-" + token(b), Warm: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	p := &phased{Runner: r, at: map[string][]time.Time{}}
	br, sub, err := approvedTrue(p, b.TempDir(), 10000)
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	b.Run("back-to-back", func(b *testing.B) { phaseLoop(b, br, p, sub, 0) })
	b.Run("spaced", func(b *testing.B) { phaseLoop(b, br, p, sub, 6*time.Millisecond) })
}

// approvedTrue opens a broker on a state directory in dir with ex as its
// executor, and returns it with a submit of /bin/true in a new workspace
// in dir under a lease of uses: the in-process chain, without sockets.
func approvedTrue(ex runner.Executor, dir string, uses uint32) (*broker.Broker, *wire.Submit, error) {
	ctx := context.Background()
	br, err := broker.Open(ctx, broker.Config{StateDir: filepath.Join(dir, "state"), Executor: ex,
		ProbeTarget: []string{bins.brokerd, "probe", probeprog.Arg}, Binaries: []string{bins.brokerd, bins.launcher}})
	if err != nil {
		return nil, nil, err
	}
	ws := filepath.Join(dir, "ws")
	sub := &wire.Submit{Workspace: ws, Request: wire.ActionRequest{Executable: "true", Cwd: ".", Profile: wire.ProfileShort, Session: "s-in-process"}}
	err = os.Mkdir(ws, 0o755)
	if err == nil {
		err = approveInProcess(ctx, br, sub, uses)
	}
	if err != nil {
		br.Close()
		return nil, nil, err
	}
	return br, sub, nil
}

// approveInProcess submits sub, which must ask for approval, and grants it uses.
func approveInProcess(ctx context.Context, br *broker.Broker, sub *wire.Submit, uses uint32) error {
	m, err := br.Submit(ctx, sub)
	req, ok := m.(*wire.ApprovalRequired)
	if err != nil || !ok {
		return fmt.Errorf("submit: %#v %v", m, err)
	}
	switch rep := br.HandleOperator(ctx, &wire.Approve{RequestID: req.Request.ID, Uses: uses, TTLSeconds: 3600}).(type) {
	case nil:
		return errors.New("approve: no reply")
	case *wire.Error:
		return fmt.Errorf("approve: %v", rep)
	}
	return nil
}

// phaseLoop runs sub until b is done, pause before each run, and reports
// the phases.
func phaseLoop(b *testing.B, br *broker.Broker, p *phased, sub *wire.Submit, pause time.Duration) {
	ctx := context.Background()
	durs := make([][]time.Duration, len(phases))
	for b.Loop() {
		if pause > 0 {
			b.StopTimer()
			time.Sleep(pause)
			b.StartTimer()
		}
		t0 := time.Now()
		m, err := br.Submit(ctx, sub)
		acc, ok := m.(*wire.Accepted)
		if err != nil || !ok {
			b.Fatalf("submit: %#v %v", m, err)
		}
		w, err := br.Wait(ctx, acc.Handle, time.Minute)
		st, ok := w.(*wire.Status)
		if err != nil || !ok || st.Result == nil || st.Result.Outcome != wire.Exited {
			b.Fatalf("wait: %#v %v", w, err)
		}
		p.mark(acc.Handle)
		p.mu.Lock()
		at := append([]time.Time{t0}, p.at[acc.Handle]...)
		delete(p.at, acc.Handle)
		p.mu.Unlock()
		if len(at) != len(phases)+1 {
			b.Fatalf("%d seams observed, want %d", len(at)-1, len(phases))
		}
		for i := range phases {
			durs[i] = append(durs[i], at[i+1].Sub(at[i]))
		}
	}
	var total time.Duration
	for i, name := range phases {
		slices.Sort(durs[i])
		total += quantile(durs[i], 0.50)
		b.ReportMetric(float64(quantile(durs[i], 0.50))/1e3, name+"-p50-µs")
		b.ReportMetric(float64(quantile(durs[i], 0.95))/1e3, name+"-p95-µs")
	}
	b.ReportMetric(float64(total)/1e3, "sum-of-p50-µs")
}
