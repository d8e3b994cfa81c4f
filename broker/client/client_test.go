package client

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"warrant/wire"
)

// mute is a broker that reads every request and never answers; it counts
// the bytes it received.
type mute struct {
	state string
	got   atomic.Int64
	conns sync.WaitGroup // the connections it is reading
}

// listenAgent listens on the agent socket of a new state directory until
// the test ends.
func listenAgent(t *testing.T) (state string, l net.Listener) {
	t.Helper()
	state = t.TempDir()
	agent, _ := SocketPaths(state)
	if err := os.Mkdir(filepath.Dir(agent), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", agent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return state, l
}

// newMute listens, mute, on both sockets of a new state directory.
func newMute(t *testing.T) *mute {
	t.Helper()
	state, agent := listenAgent(t)
	_, path := SocketPaths(state)
	operator, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { operator.Close() })
	m := &mute{state: state}
	for _, l := range []net.Listener{agent, operator} {
		go m.serve(l)
	}
	return m
}

func (m *mute) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		m.conns.Add(1)
		go func() {
			defer m.conns.Done()
			defer c.Close()
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				m.got.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
}

func (m *mute) dial(t *testing.T, timeout string) *Client {
	t.Helper()
	t.Setenv("WARRANT_REPLY_TIMEOUT", timeout)
	cl, err := Dial(m.state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestNoAnswerSaysWhetherItWasSent: against a broker that never answers,
// each request gives up at the reply timeout. A submit (which may have
// been accepted) is an uncoded error saying so; a query or an approval
// wait (which change nothing) is IO_FAILED.
func TestNoAnswerSaysWhetherItWasSent(t *testing.T) {
	m := newMute(t)
	cl := m.dial(t, "50ms")
	req := wire.ActionRequest{Executable: "true", Cwd: ".", Profile: wire.ProfileShort}
	_, err := cl.Submit(t.TempDir(), req)
	var we *wire.Error
	if err == nil || errors.As(err, &we) || !strings.Contains(err.Error(), "may have carried it out") || !strings.Contains(err.Error(), "reply timeout of 50ms") {
		t.Fatalf("unanswered submit: %v, want an uncoded error saying it may have been carried out", err)
	}
	if m.got.Load() == 0 {
		t.Fatal("the submit was never sent")
	}
	_, err = cl.Query("a-1")
	if !errors.As(err, &we) || we.Code != wire.CodeIOFailed || !strings.Contains(we.Message, "changes nothing") {
		t.Fatalf("unanswered query: %v, want IO_FAILED saying it changes nothing", err)
	}
	_, err = cl.ApprovalWait("ar-1", time.Millisecond)
	if !errors.As(err, &we) || we.Code != wire.CodeIOFailed || !strings.Contains(we.Message, "changes nothing") {
		t.Fatalf("unanswered approval wait: %v, want IO_FAILED saying it changes nothing", err)
	}
}

// TestInterruptAbandonsARequest: a done context abandons a request in
// flight, whatever the reply timeout, saying it may have been carried
// out; one done before sends nothing (the broker receives no byte) and is
// IO_FAILED.
func TestInterruptAbandonsARequest(t *testing.T) {
	m := newMute(t)
	cl := m.dial(t, "1h")
	req := wire.ActionRequest{Executable: "true", Cwd: ".", Profile: wire.ProfileShort}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := cl.SubmitCallContext(ctx, t.TempDir(), req, "")
	if err == nil || !strings.Contains(err.Error(), "interrupted before the broker answered the submit request") {
		t.Fatalf("interrupted submit: %v", err)
	}
	sent := m.got.Load()
	_, err = cl.SubmitCallContext(ctx, t.TempDir(), req, "")
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeIOFailed || !strings.Contains(we.Message, "not sent") {
		t.Fatalf("submit after the interrupt: %v, want IO_FAILED not sent", err)
	}
	_, _, err = cl.WaitContext(ctx, "a-1", time.Hour)
	if !errors.As(err, &we) || we.Code != wire.CodeIOFailed {
		t.Fatalf("wait after the interrupt: %v, want IO_FAILED", err)
	}
	cl.Close()
	m.conns.Wait() // every byte written has been read
	if got := m.got.Load(); got != sent {
		t.Fatalf("the broker received %d bytes after the interrupt", got-sent)
	}
}

// TestInterruptAbandonsAGrant: an operator's approve or deny in flight
// (as `broker run --approve` and its prompt send them) is given up on
// when its context is done, before the reply timeout, and says the
// broker may have made the decision. (A call that ignored its context
// would end at the timeout, and say so.)
func TestInterruptAbandonsAGrant(t *testing.T) {
	m := newMute(t)
	cl := m.dial(t, "2s")
	for name, call := range map[string]func(context.Context) error{
		"approve": func(ctx context.Context) error { _, err := cl.ApproveContext(ctx, "q-1", 1, time.Minute); return err },
		"deny":    func(ctx context.Context) error { return cl.DenyContext(ctx, "q-1", "no") },
	} {
		before := m.got.Load()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { // interrupted once the broker has the request
			for m.got.Load() == before && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		err := call(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "interrupted before the broker answered the "+name+" request") ||
			!strings.Contains(err.Error(), "may have made the decision") {
			t.Fatalf("interrupted %s: %v", name, err)
		}
		if m.got.Load() == before {
			t.Fatalf("the %s was never sent", name)
		}
	}
}

// TestBadReplyTimeoutIsRefused: a reply timeout that is not a positive
// duration stops Dial rather than leaving requests unbounded.
func TestBadReplyTimeoutIsRefused(t *testing.T) {
	m := newMute(t)
	for _, v := range []string{"0", "-1s", "soon"} {
		t.Setenv("WARRANT_REPLY_TIMEOUT", v)
		if _, err := Dial(m.state); err == nil || !strings.Contains(err.Error(), "WARRANT_REPLY_TIMEOUT") {
			t.Errorf("WARRANT_REPLY_TIMEOUT=%s: %v", v, err)
		}
	}
}

// scripted is a broker whose n-th connection (from 0) answers each request
// with reply(n), closing the connection after it when closeAfter(n).
func scripted(t *testing.T, reply func(n int) wire.Message, closeAfter func(n int) bool) (state string, got *atomic.Int64) {
	t.Helper()
	state, l := listenAgent(t)
	got = &atomic.Int64{}
	go func() {
		for n := 0; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for {
					if _, err := wire.ReadFrame(c, wire.MaxAgentFrame, wire.AgentChannel); err != nil {
						return
					}
					got.Add(1)
					if wire.WriteFrame(c, reply(n)) != nil || closeAfter(n) {
						return
					}
				}
			}()
		}
	}()
	return state, got
}

// TestLetGoIsSentAgain: a BUSY notice after which the broker closes the
// connection (it let the connection go without handling the request) has
// the request sent once more on a new connection; a BUSY the broker
// answers on a connection it keeps (a session with an action in flight)
// is the answer.
func TestLetGoIsSentAgain(t *testing.T) {
	busy := wire.Errorf(wire.CodeBusy, "let go")
	req := wire.ActionRequest{Executable: "true", Cwd: ".", Profile: wire.ProfileShort}
	state, got := scripted(t, func(n int) wire.Message {
		if n == 0 {
			return busy
		}
		return &wire.Accepted{Handle: "a-1"}
	}, func(n int) bool { return n == 0 })
	cl, err := Dial(state)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s, err := cl.Submit(t.TempDir(), req)
	if err != nil || s.Handle != "a-1" || got.Load() != 2 {
		t.Fatalf("submit after a let-go notice: %+v %v, %d requests received; want a-1 after 2", s, err, got.Load())
	}

	state, got = scripted(t, func(int) wire.Message { return busy }, func(int) bool { return false })
	cl2, err := Dial(state)
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	var we *wire.Error
	if _, err := cl2.Submit(t.TempDir(), req); !errors.As(err, &we) || we.Code != wire.CodeBusy || got.Load() != 1 {
		t.Fatalf("submit answered BUSY on a kept connection: %v, %d requests received; want BUSY after 1", err, got.Load())
	}
}
