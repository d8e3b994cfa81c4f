package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// readReply reads one reply frame, or returns the I/O error.
func readReply(c net.Conn) (wire.Message, error) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return wire.ReadFrame(c, wire.MaxAgentFrame, wire.ReplyChannel)
}

func frame(body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

// TestSocketMalformedFramesAnswered sends each kind of bad frame to both
// sockets and expects an ARGUMENTS_INVALID reply followed by the close.
func TestSocketMalformedFramesAnswered(t *testing.T) {
	r := newRig(t, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	agent, operator := client.SocketPaths(r.state)
	submit, err := wire.EncodeFrame(&wire.Submit{Workspace: r.workspace, Request: r.request()})
	must(t, err)
	approve, err := wire.EncodeFrame(&wire.Approve{RequestID: "x", Uses: 1, TTLSeconds: 1})
	must(t, err)
	// An extra field in the request map: {"type":"submit","body":{...,"zz":1}}
	// is built by hand from the canonical encoding (a map of n pairs gets
	// one more pair).
	cases := map[string][]byte{
		"garbage":         frame([]byte{0xff, 0x00, 0x13, 0x37}),
		"oversize length": binary.BigEndian.AppendUint32(nil, 0xffffffff),
		"empty frame":     binary.BigEndian.AppendUint32(nil, 0),
		"truncated body":  submit[:len(submit)-3],
		"wrong channel":   approve, // an operator message on agent.sock
		"trailing bytes":  frame(append(append([]byte{}, submit[4:]...), 0)),
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("unix", agent)
			must(t, err)
			defer c.Close()
			_, err = c.Write(bad)
			must(t, err)
			if name == "truncated body" {
				c.(*net.UnixConn).CloseWrite()
			}
			reply, err := readReply(c)
			must(t, err)
			var we *wire.Error
			if e, ok := reply.(*wire.Error); ok {
				we = e
			}
			if we == nil || we.Code != wire.CodeArgumentsInvalid {
				t.Fatalf("reply %#v, want ARGUMENTS_INVALID", reply)
			}
			if _, err := readReply(c); !errors.Is(err, io.EOF) {
				t.Fatalf("connection not closed after a malformed frame: %v", err)
			}
		})
	}
	// The operator socket refuses agent messages the same way.
	c, err := net.Dial("unix", operator)
	must(t, err)
	defer c.Close()
	_, err = c.Write(submit)
	must(t, err)
	reply, err := readReply(c)
	must(t, err)
	if e, ok := reply.(*wire.Error); !ok || e.Code != wire.CodeArgumentsInvalid {
		t.Fatalf("operator socket answered a submit with %#v", reply)
	}
}

// TestSocketRobustUnderAbuse throws random and truncated frames, oversize
// lengths and slow clients at both sockets while valid clients keep
// getting correct answers.
func TestSocketRobustUnderAbuse(t *testing.T) {
	r := newRig(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond; c.MaxConns = 256 })
	agent, operator := client.SocketPaths(r.state)
	view, _ := r.approved(r.request(), 1000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	abuse := func(seed uint64, path string) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 7))
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := net.Dial("unix", path)
			if err != nil {
				continue
			}
			switch rng.IntN(4) {
			case 0: // random bytes
				buf := make([]byte, rng.IntN(64))
				for i := range buf {
					buf[i] = byte(rng.Uint32())
				}
				c.Write(buf)
			case 1: // a header promising more than is sent
				c.Write(binary.BigEndian.AppendUint32(nil, uint32(rng.IntN(wire.MaxAgentFrame))))
				c.Write([]byte{0xa2})
			case 2: // an oversize length
				c.Write(binary.BigEndian.AppendUint32(nil, wire.MaxAgentFrame+1+uint32(rng.IntN(1000))))
			case 3: // slow: one byte, then silence until the broker gives up
				c.Write([]byte{0})
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				io.Copy(io.Discard, c)
			}
			c.Close()
		}
	}
	for i := range 8 {
		wg.Add(2)
		go abuse(uint64(i), agent)
		go abuse(uint64(i+100), operator)
	}
	var valid sync.WaitGroup
	errs := make(chan error, 16)
	for range 4 {
		valid.Add(1)
		go func() {
			defer valid.Done()
			cl, err := client.Dial(r.state)
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			for range 25 {
				s, err := cl.Submit(r.workspace, r.request())
				if err != nil || s.Handle == "" {
					errs <- errors.Join(errors.New("submit under abuse was not accepted"), err)
					return
				}
				st, err := cl.Query(s.Handle)
				if err != nil || st.State != wire.StateAccepted {
					errs <- errors.Join(errors.New("query under abuse"), err)
					return
				}
				l, err := cl.List(wire.ListLeases, false)
				if err != nil || len(l.Leases) != 1 || l.Leases[0].ApprovalID != view.ID {
					errs <- errors.Join(errors.New("list under abuse"), err)
					return
				}
			}
		}()
	}
	valid.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := r.lease(r.mustLeaseID()).UsesLeft; got != 1000-100 {
		t.Fatalf("uses left %d after 100 accepted submits, want 900", got)
	}
}

func (r *rig) mustLeaseID() string {
	l, err := r.cl.List(wire.ListLeases, false)
	must(r.t, err)
	if len(l.Leases) != 1 {
		r.t.Fatalf("%d leases, want 1", len(l.Leases))
	}
	return l.Leases[0].ID
}

// TestSocketFullOfRequestsBusy fills the connection limit with clients
// each in a request (a wait on an action that does not end); the next one
// is told BUSY instead of hanging.
func TestSocketFullOfRequestsBusy(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxConns = 4; c.IdleTimeout = 10 * time.Second })
	r.approved(r.request(), 1)
	s := r.submit(r.request())
	agent, _ := client.SocketPaths(r.state)
	wait, err := wire.EncodeFrame(&wire.Wait{Handle: s.Handle, BudgetMs: 10_000})
	must(t, err)
	var held []net.Conn
	for range 4 { // the fourth takes the place of the rig's idle client
		c, err := net.Dial("unix", agent)
		must(t, err)
		_, err = c.Write(wait)
		must(t, err)
		held = append(held, c)
		time.Sleep(20 * time.Millisecond) // let the broker begin the wait
	}
	c, err := net.Dial("unix", agent)
	must(t, err)
	defer c.Close()
	reply, err := readReply(c)
	must(t, err)
	if e, ok := reply.(*wire.Error); !ok || e.Code != wire.CodeBusy || !strings.Contains(e.Message, "each in a request") {
		t.Fatalf("reply %#v, want BUSY", reply)
	}
	for _, h := range held {
		h.Close()
	}
}

// TestSocketIdleConnectionGivesWay fills the connection limit with idle
// clients: a new one is served, one idle connection is told BUSY and
// closed, and the others are still served.
func TestSocketIdleConnectionGivesWay(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxConns = 4; c.IdleTimeout = 10 * time.Second })
	agent, _ := client.SocketPaths(r.state)
	query, err := wire.EncodeFrame(&wire.Query{Handle: "a-none"})
	must(t, err)
	var held []net.Conn
	for range 3 { // and the rig's client's
		c, err := net.Dial("unix", agent)
		must(t, err)
		defer c.Close()
		held = append(held, c)
	}
	time.Sleep(50 * time.Millisecond) // let the broker accept them
	c, err := net.Dial("unix", agent)
	must(t, err)
	defer c.Close()
	_, err = c.Write(query)
	must(t, err)
	reply, err := readReply(c)
	must(t, err)
	if e, ok := reply.(*wire.Error); ok && e.Code == wire.CodeBusy {
		t.Fatalf("the new connection was refused: %v", e)
	}
	evicted := 0
	for _, h := range held {
		h.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		m, err := wire.ReadFrame(h, wire.MaxAgentFrame, wire.ReplyChannel)
		if e, ok := m.(*wire.Error); ok && e.Code == wire.CodeBusy {
			evicted++
			if _, err := wire.ReadFrame(h, wire.MaxAgentFrame, wire.ReplyChannel); !errors.Is(err, io.EOF) {
				t.Fatalf("an evicted connection stays open: %v", err)
			}
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("an idle connection read %#v %v", m, err)
		}
		_, err = h.Write(query)
		must(t, err)
		if reply, err := readReply(h); err != nil || reply.Type() != wire.TypeError || reply.(*wire.Error).Code == wire.CodeBusy {
			t.Fatalf("a connection left in place is not served: %#v %v", reply, err)
		}
	}
	if evicted > 1 {
		t.Fatalf("%d idle connections were closed for one new one", evicted)
	}
	var we *wire.Error
	if _, err := r.cl.Query("a-none"); !errors.As(err, &we) || we.Code == wire.CodeBusy {
		t.Fatalf("the rig's client, evicted or not, is not served again: %v", err)
	}
}

// TestWaitBudgetCapped: a wait (or approval wait) over the cap is
// refused, naming the cap,
// before anything else; one at the cap is taken (and here refused only
// for its unknown handle). The client's Wait of any length stays under it.
func TestWaitBudgetCapped(t *testing.T) {
	r := newRig(t)
	over := &wire.Wait{Handle: "a-none", BudgetMs: uint32(MaxWait.Milliseconds()) + 1}
	if e, ok := r.b.HandleAgent(context.Background(), over).(*wire.Error); !ok || e.Code != wire.CodeArgumentsInvalid ||
		!strings.Contains(e.Message, "at most 60000 ms") {
		t.Fatalf("a wait over the cap answered %#v", e)
	}
	overApproval := &wire.ApprovalWait{RequestID: "ar-none", BudgetMs: uint32(MaxWait.Milliseconds()) + 1}
	if e, ok := r.b.HandleAgent(context.Background(), overApproval).(*wire.Error); !ok || e.Code != wire.CodeArgumentsInvalid ||
		!strings.Contains(e.Message, "at most 60000 ms") {
		t.Fatalf("an approval wait over the cap answered %#v", e)
	}
	at := &wire.Wait{Handle: "a-none", BudgetMs: uint32(MaxWait.Milliseconds())}
	if e, ok := r.b.HandleAgent(context.Background(), at).(*wire.Error); !ok || strings.Contains(e.Message, "at most") {
		t.Fatalf("a wait at the cap answered %#v", e)
	}
	var we *wire.Error
	if _, _, err := r.cl.Wait("a-none", time.Hour); !errors.As(err, &we) || strings.Contains(we.Message, "at most") {
		t.Fatalf("the client's hour-long wait: %v", err)
	}
}
