package clid

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"warrant/broker/cli"

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

// connect dials the daemon on the state directory (cli.Env.DialFor), or
// starts an embedded broker there, configured by o, when none answers
// (openEmbedded); live receives its actions' redacted output.
func connect(ctx context.Context, e *cli.Env, o cli.BrokerOptions, live func(string, receipt.StreamName, []byte)) (*client.Client, *embedded, error) {
	if cl, err := e.DialFor(o); cl != nil || err != nil {
		return cl, nil, err
	}
	return openEmbedded(ctx, e, o, live)
}

// openEmbedded starts an embedded broker on the state directory and
// dials it. The embedded broker's log is not shown, but for one
// sentence: how many actions it found in flight, left by a broker that
// stopped, and recorded as unknown (said once: the next broker finds
// none of them in flight).
func openEmbedded(ctx context.Context, e *cli.Env, o cli.BrokerOptions, live func(string, receipt.StreamName, []byte)) (*client.Client, *embedded, error) {
	d, err := openDaemon(ctx, e, o, io.Discard, live)
	if err != nil {
		return nil, nil, err
	}
	if n := len(d.b.Recovered()); n > 0 {
		st := cli.StateFlag(e.State)
		fmt.Fprintf(e.Stderr, "warrant: %d action(s) were in flight when the previous broker on %s stopped; their outcome is unknown "+
			"and nothing was re-run: see `broker actions --unknown%s`, then record what you know with `broker resolve HANDLE success|failed|stop%s`\n",
			n, e.State, st, st)
	}
	sctx, cancel := context.WithCancel(context.Background())
	em := &embedded{d: d, cancel: cancel, served: make(chan error, 1)}
	go func() { em.served <- d.b.Serve(sctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cl, err := client.Dial(e.State)
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

// embed is cli.Local.Embed: `run`'s embedded broker, and how to stop it.
func embed(ctx context.Context, e *cli.Env, o cli.BrokerOptions) (*client.Client, func(), error) {
	cl, em, err := openEmbedded(ctx, e, o, nil)
	if err != nil {
		return nil, nil, err
	}
	return cl, em.stop, nil
}

// stop ends serving, waits for actions in flight and releases the state.
func (em *embedded) stop() {
	em.cancel()
	<-em.served
	em.d.close()
}
