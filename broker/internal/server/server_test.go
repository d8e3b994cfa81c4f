package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"warrant/wire"
)

// A reply that fails validation is the broker's defect: it is logged,
// and the peer is answered INTERNAL in its place, on a connection still
// in step (the next request is answered), never a silent close. A
// stream frame that fails ends the stream with INTERNAL, once.
func TestInvalidReplyAnsweredInternal(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var logged []string
	invalid := &wire.ContractOffers{Offers: []wire.ContractOfferItem{{Name: "git", Usage: "git status"}}} // no cover
	handler := func(_ context.Context, m wire.Message) wire.Message {
		if _, ok := m.(*wire.ContractOffer); ok {
			return invalid
		}
		return &wire.OK{}
	}
	o := Options{AgentPath: filepath.Join(dir, "agent.sock"), OperatorPath: filepath.Join(dir, "operator.sock"),
		Agent: handler, Operator: handler, MaxConns: 4, IdleTimeout: 5 * time.Second,
		Streams: map[wire.MsgType]StreamHandler{wire.TypeFollow: func(_ context.Context, _ wire.Message, send func(wire.Message) error) wire.Message {
			if err := send(invalid); err == nil {
				t.Error("sending an invalid frame succeeded")
			}
			return &wire.Status{Handle: "act-1", State: wire.StateRunning}
		}},
		Logf: func(f string, a ...any) { mu.Lock(); logged = append(logged, fmt.Sprintf(f, a...)); mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, o) }()
	defer func() { cancel(); <-done }()

	dial := func(p string) net.Conn {
		for range 500 {
			if c, err := net.Dial("unix", p); err == nil {
				return c
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("no server at %s", p)
		return nil
	}
	ask := func(c net.Conn, m wire.Message) wire.Message {
		t.Helper()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if err := wire.WriteFrame(c, m); err != nil {
			t.Fatal(err)
		}
		r, err := wire.ReadFrame(c, wire.MaxAgentFrame, wire.ReplyChannel)
		if err != nil {
			t.Fatalf("answer to %s: %v", m.Type(), err)
		}
		return r
	}
	wantInternal := func(r wire.Message) {
		t.Helper()
		var we *wire.Error
		if e, ok := r.(*wire.Error); !ok || !errors.As(e, &we) || we.Code != wire.CodeInternal || we.Message == "" {
			t.Fatalf("answered %#v; want INTERNAL with a sentence", r)
		}
	}

	op := dial(o.OperatorPath)
	defer op.Close()
	wantInternal(ask(op, &wire.ContractOffer{Request: "ar-1"}))
	if r := ask(op, &wire.Deny{RequestID: "ar-1"}); r.Type() != wire.TypeOK {
		t.Fatalf("the next request on the connection: %#v; want OK", r)
	}
	ag := dial(o.AgentPath)
	defer ag.Close()
	wantInternal(ask(ag, &wire.Follow{Handle: "act-1"}))
	if r := ask(ag, &wire.Query{Handle: "act-1"}); r.Type() != wire.TypeOK {
		t.Fatalf("the request after the failed stream: %#v; want OK", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(logged); n != 2 || !strings.Contains(logged[0], "contract_offers") || !strings.Contains(logged[0], "covers: empty") {
		t.Fatalf("logged %q; want each invalid answer said once, with why", logged)
	}
}
