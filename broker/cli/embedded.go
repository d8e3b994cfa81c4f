package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"warrant/broker/client"
	"warrant/receipt"
)

// embedded is a broker that `broker run` serves in-process because no
// daemon answered on the state directory. It holds the state lock and
// serves the usual sockets, so `broker approve` from another terminal
// reaches it.
type embedded struct {
	d      *daemon
	cancel context.CancelFunc
	served chan error
}

// connect dials the daemon on the state directory, or starts an embedded
// broker there, configured by o, when none answers; live receives its
// actions' redacted output. The embedded broker's log is not shown, but
// for one sentence: how many actions it found in flight, left by a
// broker that stopped, and recorded as unknown (said once: the next
// broker finds none of them in flight). A daemon has its own configuration: o's --env
// or --cargo-target-cache against one is a usage error rather than
// silently ignored.
func (e *env) connect(ctx context.Context, o brokerOptions, live func(string, receipt.StreamName, []byte)) (*client.Client, *embedded, error) {
	if cl, err := client.Dial(e.state); err == nil {
		if len(o.env) > 0 || o.cargoTarget {
			cl.Close()
			return nil, nil, usageError{fmt.Sprintf("--env and --cargo-target-cache configure the embedded broker, but a daemon answers on %s: "+
				"declare them where it starts (broker serve --env NAME=VALUE, or %s)", e.state, filepath.Join(e.state, "env"))}
		}
		return cl, nil, nil
	}
	d, err := openDaemon(ctx, e, o, io.Discard, live)
	if err != nil {
		return nil, nil, err
	}
	if n := len(d.b.Recovered()); n > 0 {
		st := stateFlag(e.state)
		fmt.Fprintf(e.stderr, "warrant: %d action(s) were in flight when the previous broker on %s stopped; their outcome is unknown "+
			"and nothing was re-run: see `broker actions --unknown%s`, then record what you know with `broker resolve HANDLE success|failed|stop%s`\n",
			n, e.state, st, st)
	}
	sctx, cancel := context.WithCancel(context.Background())
	em := &embedded{d: d, cancel: cancel, served: make(chan error, 1)}
	go func() { em.served <- d.b.Serve(sctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cl, err := client.Dial(e.state)
		if err == nil {
			return cl, em, nil
		}
		select {
		case serr := <-em.served:
			d.close()
			return nil, nil, fmt.Errorf("embedded broker: %w", errors.Join(serr, err))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			em.stop()
			return nil, nil, fmt.Errorf("embedded broker: its sockets did not answer: %w", err)
		}
	}
}

// stop ends serving, waits for actions in flight and releases the state.
func (em *embedded) stop() {
	em.cancel()
	<-em.served
	em.d.close()
}
