package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"warrant/wire"
)

// Handler answers one decoded request; errors are *wire.Error replies.
type Handler func(context.Context, wire.Message) wire.Message

// StreamHandler answers one request with any number of frames, each given
// to send (which fails once the peer is gone or too slow), and then its
// final reply. It must stop and return soon after send fails.
type StreamHandler func(ctx context.Context, m wire.Message, send func(wire.Message) error) wire.Message

// Options configure Serve.
type Options struct {
	AgentPath, OperatorPath string // the two sockets, in a 0700 directory
	Agent, Operator         Handler
	// Streams answer the request types that are answered by several
	// frames (wire.Follow), on whichever channel admits them.
	Streams     map[wire.MsgType]StreamHandler
	MaxConns    int           // concurrent connections per socket
	IdleTimeout time.Duration // a connection must complete its next frame within this
	Logf        func(string, ...any)
}

// Serve listens on the agent and operator sockets (or takes them from
// systemd's socket activation: activated) until ctx is done, then
// closes every connection and returns. Each connection is checked with
// SO_PEERCRED (LOCAL_PEERCRED on macOS) against this process's uid,
// limited in number per socket, and must complete each frame within
// IdleTimeout. A new connection to a full socket takes the place of the
// connection that has been idle longest (waiting for its next request):
// that one is sent a BUSY notice and closed, and a request it may have
// been sending is never handled. Only when every connection is in a
// request is the new one refused with BUSY. A malformed frame is answered with ARGUMENTS_INVALID
// and the connection is closed, since the stream is out of step. A panic
// in a handler, and an answer that fails validation (write), are logged
// and answered with INTERNAL; the daemon keeps running.
func Serve(ctx context.Context, o Options) error {
	agentPath, operatorPath := o.AgentPath, o.OperatorPath
	passed, err := activated(agentPath, operatorPath)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	var agent, operator *net.UnixListener
	if passed != nil {
		agent, operator = passed[0], passed[1]
	} else {
		// The operator socket listens first, so that a client to which the
		// agent socket answers (client.Dial checks it) can reach both.
		if operator, err = listen(operatorPath); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		if agent, err = listen(agentPath); err != nil {
			operator.Close()
			return fmt.Errorf("serve: %w", err)
		}
	}
	s := &server{o: o}
	pools := []*pool{newPool(o.MaxConns), newPool(o.MaxConns)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.wg.Add(2)
	go s.accept(ctx, agent, wire.AgentChannel, o.Agent, pools[0])
	go s.accept(ctx, operator, wire.OperatorChannel, o.Operator, pools[1])
	<-ctx.Done()
	agent.Close()
	operator.Close()
	for _, p := range pools {
		p.closeAll()
	}
	s.wg.Wait()
	if passed == nil { // a socket unit's files stay for the next activation
		os.Remove(agentPath)
		os.Remove(operatorPath)
	}
	return nil
}

// listen binds a unix socket at p, replacing a stale socket file left by a
// broker that died (the state lock proves no live broker owns it).
func listen(p string) (*net.UnixListener, error) {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(p, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return l, nil
}

type server struct {
	o  Options
	wg sync.WaitGroup
}

func (s *server) accept(ctx context.Context, l *net.UnixListener, ch wire.Channel, h Handler, p *pool) {
	defer s.wg.Done()
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.o.Logf("accept on %s socket: %v", ch, err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !p.admit(ch) {
			refuse(c, wire.Errorf(wire.CodeBusy, "the %s socket has %d connections open, each in a request; try again", ch, s.o.MaxConns))
			continue
		}
		sc := p.add(c)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer p.remove(sc)
			s.serveConn(ctx, sc, ch, h)
		}()
	}
}

// refuse sends one error frame and closes c, without waiting long.
func refuse(c net.Conn, e *wire.Error) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	wire.WriteFrame(c, e)
	c.Close()
}

func (s *server) serveConn(ctx context.Context, sc *conn, ch wire.Channel, h Handler) {
	c := sc.nc
	if uid, err := peerUID(c); err != nil || uid != uint32(os.Getuid()) {
		s.o.Logf("refused a %s connection from uid %d (%v)", ch, uid, err)
		refuse(c, wire.Errorf(wire.CodeArgumentsInvalid, "only uid %d may use this socket", os.Getuid()))
		return
	}
	// The next frame must begin, and one that began must complete, within
	// the idle timeout.
	deadline := func() { c.SetReadDeadline(time.Now().Add(s.o.IdleTimeout)) }
	r := &countingReader{r: c, began: deadline}
	for {
		if !sc.idle() {
			return // evicted
		}
		deadline()
		r.n = 0
		m, err := wire.ReadFrame(r, wire.MaxAgentFrame, ch)
		if !sc.busy() {
			return // evicted while reading: the request is not handled
		}
		if err != nil {
			switch {
			case errors.Is(err, wire.ErrMalformed):
				refuse(c, wire.Errorf(wire.CodeArgumentsInvalid, "%v; closing the connection", err))
			case r.n > 0: // a frame began and did not complete: truncated or too slow
				refuse(c, wire.Errorf(wire.CodeArgumentsInvalid, "incomplete frame (%v); closing the connection", err))
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		var reply wire.Message
		answered := false // a stream frame was answered INTERNAL in its place: that ended the request
		if sh, ok := s.o.Streams[m.Type()]; ok {
			reply = s.call(ctx, func(ctx context.Context, m wire.Message) wire.Message {
				return sh(ctx, m, func(f wire.Message) error {
					err := s.write(c, m, f)
					answered = answered || errors.Is(err, errAnswered)
					return err
				})
			}, m)
		} else {
			reply = s.call(ctx, h, m)
		}
		if answered {
			continue
		}
		if err := s.write(c, m, reply); err != nil && !errors.Is(err, errAnswered) {
			return
		}
	}
}

// errAnswered is write's error when the message it was given failed
// validation and the peer was answered INTERNAL in its place: the
// request has its answer, and the connection is still in step.
var errAnswered = errors.New("an invalid answer was replaced by INTERNAL")

// write sends one frame answering req, which must be taken within the
// idle timeout. A message that fails validation is the broker's defect:
// it is logged, and INTERNAL goes in its place (errAnswered), so the
// peer learns the request failed instead of seeing the connection close.
func (s *server) write(c net.Conn, req, m wire.Message) error {
	frame, err := wire.EncodeFrame(m)
	if err != nil {
		s.o.Logf("the answer to %s is invalid, INTERNAL sent instead: %v", req.Type(), err)
		if frame, err = wire.EncodeFrame(wire.Errorf(wire.CodeInternal, "the broker failed internally answering %s", req.Type())); err != nil {
			return err
		}
		err = errAnswered
	}
	c.SetWriteDeadline(time.Now().Add(s.o.IdleTimeout))
	if _, werr := c.Write(frame); werr != nil {
		return fmt.Errorf("write frame: %w", werr)
	}
	return err
}

// call runs one handler, turning a panic into an INTERNAL reply.
func (s *server) call(ctx context.Context, h Handler, m wire.Message) (reply wire.Message) {
	defer func() {
		if p := recover(); p != nil {
			s.o.Logf("panic answering %s: %v", m.Type(), p)
			reply = wire.Errorf(wire.CodeInternal, "the broker failed internally answering %s", m.Type())
		}
	}()
	return h(ctx, m)
}

type countingReader struct {
	r     io.Reader
	n     int
	began func() // when the first bytes of a frame arrive
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n == 0 && n > 0 {
		c.began()
	}
	c.n += n
	return n, err
}
