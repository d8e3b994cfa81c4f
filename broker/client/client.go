package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"warrant/wire"
)

// DefaultReplyTimeout is how long a client waits for each reply beyond
// the request's own wait budget, unless $WARRANT_REPLY_TIMEOUT (a Go
// duration, for tests and unusually slow hosts) says otherwise. It
// matches the broker's own bound on each frame of a client (30 s): a live
// broker answers every request well within it, however long its actions
// run, since each connection is served on its own and a wait answers at
// its budget.
const DefaultReplyTimeout = 30 * time.Second

// maxPoll is the longest single wait request Wait sends: a longer wait is
// a series of polls, each of which must be answered.
const maxPoll = 10 * time.Second

// replyTimeout is DefaultReplyTimeout, or $WARRANT_REPLY_TIMEOUT.
func replyTimeout() (time.Duration, error) {
	v := os.Getenv("WARRANT_REPLY_TIMEOUT")
	if v == "" {
		return DefaultReplyTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("dial broker: WARRANT_REPLY_TIMEOUT=%q is not a positive duration such as 30s", v)
	}
	return d, nil
}

// SocketPaths returns the agent and operator socket paths of a state
// directory: agent.sock and operator.sock in SocketDir.
func SocketPaths(stateDir string) (agent, operator string) {
	run := SocketDir(stateDir)
	return filepath.Join(run, "agent.sock"), filepath.Join(run, "operator.sock")
}

// SocketDir is where the broker of stateDir listens. For the default
// state directory ($XDG_STATE_HOME/warrant, else ~/.local/state/warrant)
// it is $XDG_RUNTIME_DIR/warrant, where a systemd user unit's
// warrant.socket makes them (contrib/systemd), when $XDG_RUNTIME_DIR is an
// absolute directory of this uid that no one else can enter; for any
// other state directory, or without such a runtime directory, it is
// run/ inside the state directory.
func SocketDir(stateDir string) string {
	if rt, ok := runtimeDir(); ok && sameDir(stateDir, XDGStateDir()) {
		return filepath.Join(rt, "warrant")
	}
	return filepath.Join(stateDir, "run")
}

// DefaultStateDir is $WARRANT_STATE, else $XDG_STATE_HOME/warrant, else
// ~/.local/state/warrant.
func DefaultStateDir() (string, error) {
	if d := os.Getenv("WARRANT_STATE"); d != "" {
		return d, nil
	}
	if d := XDGStateDir(); d != "" {
		return d, nil
	}
	return "", errors.New("find state directory: neither $WARRANT_STATE, $XDG_STATE_HOME nor a home directory is set")
}

// XDGStateDir is the default state directory without $WARRANT_STATE:
// $XDG_STATE_HOME/warrant, else ~/.local/state/warrant ("" when there is
// no home).
func XDGStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "warrant")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".local", "state", "warrant")
}

// runtimeDir is $XDG_RUNTIME_DIR when it is an absolute directory owned
// by this uid with mode 0700, as pam_systemd makes it.
func runtimeDir() (string, bool) {
	d := os.Getenv("XDG_RUNTIME_DIR")
	if !filepath.IsAbs(d) {
		return "", false
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(d, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR ||
		st.Uid != uint32(os.Geteuid()) || st.Mode&0o777 != 0o700 {
		return "", false
	}
	return d, true
}

func sameDir(a, b string) bool {
	if b == "" {
		return false
	}
	a, errA := filepath.Abs(a)
	b, errB := filepath.Abs(b)
	return errA == nil && errB == nil && a == b
}

// Client talks to the broker of one state directory. Its methods are safe
// for concurrent use; requests on one socket are serialized.
type Client struct {
	Agent
	operator conn
}

// Agent is the agent's half of a Client (agent.go): it speaks only on
// agent.sock and holds no connection to operator.sock, so code given an
// *Agent, such as the MCP server, cannot approve, deny, revoke, list or
// resolve.
type Agent struct {
	sock conn
}

type conn struct {
	mu      sync.Mutex
	path    string
	timeout time.Duration // for each reply, beyond the request's budget
	c       net.Conn
}

// Dial returns a client for the broker of stateDir, checking that its
// agent socket answers. Connections are made on first use and remade
// after an error. Every request is bounded (see roundTrip).
func Dial(stateDir string) (*Client, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("dial broker: %w", err)
	}
	bound, err := replyTimeout()
	if err != nil {
		return nil, err
	}
	a, o := SocketPaths(abs)
	cl := &Client{Agent: Agent{sock: conn{path: a, timeout: bound}}, operator: conn{path: o, timeout: bound}}
	cl.sock.mu.Lock()
	defer cl.sock.mu.Unlock()
	if err := cl.sock.connect(); err != nil {
		return nil, err
	}
	return cl, nil
}

// Close closes both connections.
func (cl *Client) Close() error {
	for _, c := range []*conn{&cl.sock, &cl.operator} {
		c.mu.Lock()
		if c.c != nil {
			c.c.Close()
			c.c = nil
		}
		c.mu.Unlock()
	}
	return nil
}

func (c *conn) connect() error {
	if c.c != nil && alive(c.c) {
		return nil
	}
	if c.c != nil {
		c.c.Close()
	}
	nc, err := net.DialTimeout("unix", c.path, 5*time.Second)
	if err != nil {
		return fmt.Errorf("dial broker: %w", err)
	}
	c.c = nc
	return nil
}

// roundTrip is roundTripContext of a request that does not wait, never
// abandoned before its bound.
func (c *conn) roundTrip(m wire.Message) (wire.Message, error) {
	return c.roundTripContext(context.Background(), m, 0)
}

// roundTripContext sends m and reads one reply, which must come within
// budget (the request's own wait, 0 for the others) plus the reply
// timeout; ctx done aborts it at once. A *wire.Error reply is returned as the error. A
// message that does not encode (a field over its cap, a NUL byte) is
// ARGUMENTS_INVALID, and nothing is sent.
//
// Failures say whether the broker may have acted on m. Not sent (no
// connection, the broker's process is stopped, interrupted first, or the
// frame not wholly written, which the broker never acts on): IO_FAILED.
// Sent with no answer: IO_FAILED for a request that changes nothing
// (query, wait, list, approval wait); for any other an uncoded error
// saying the broker may have carried it out (for an approve or deny, made
// the decision) — to `broker run`, after a submit, an outcome it cannot
// know.
//
// A BUSY answer after which the broker closes the connection is its
// notice that it let the connection go (evicted as idle, or refused with
// every connection in a request) without handling m (broker/internal/
// server); m is then sent once more on a new connection.
func (c *conn) roundTripContext(ctx context.Context, m wire.Message, budget time.Duration) (wire.Message, error) {
	frame, err := wire.EncodeFrame(m)
	if err != nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "%v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for again := true; ; again = false {
		if ctx.Err() != nil {
			return nil, notSent(m, "interrupted", nil)
		}
		if err := c.connect(); err != nil {
			return nil, notSent(m, fmt.Sprintf("no broker answers at %s (%s)", c.path, plainCause(err)), err)
		}
		if pid, stopped := peerStopped(c.c); stopped {
			return nil, notSent(m, fmt.Sprintf("the broker (pid %d) is stopped (`kill -CONT %d` resumes it)", pid, pid), nil)
		}
		nc := c.c
		nc.SetDeadline(time.Now().Add(budget + c.timeout))
		abort := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
		reply, sent, err := exchange(nc, m.Type(), frame)
		interrupted := !abort()
		if err != nil {
			err = noAnswer(m, nc, sent, interrupted, budget, c.timeout, err)
			c.drop()
			return nil, err
		}
		e, ok := reply.(*wire.Error)
		if ok && e.Code == wire.CodeBusy && letGo(nc) {
			c.drop()
			if again {
				continue
			}
		}
		nc.SetDeadline(time.Time{})
		if ok {
			return nil, e
		}
		return reply, nil
	}
}

func (c *conn) drop() {
	c.c.Close()
	c.c = nil
}

// letGo reports whether the broker closed nc after its last reply.
func letGo(nc net.Conn) bool {
	nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var b [1]byte
	_, err := nc.Read(b[:])
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// exchange writes frame and reads one reply; sent is whether the whole
// frame was written. A broker that refused the connection may have
// written why before closing it: that error is the reply.
func exchange(nc net.Conn, t wire.MsgType, frame []byte) (_ wire.Message, sent bool, _ error) {
	if _, err := nc.Write(frame); err != nil {
		if reply, rerr := wire.ReadFrame(nc, wire.MaxAgentFrame, wire.ReplyChannel); rerr == nil && reply.Type() == wire.TypeError {
			return reply, false, nil
		}
		return nil, false, fmt.Errorf("send %s: %w", t, err)
	}
	reply, err := wire.ReadFrame(nc, wire.MaxAgentFrame, wire.ReplyChannel)
	if err != nil {
		return nil, true, fmt.Errorf("read reply to %s: %w", t, err)
	}
	return reply, true, nil
}

// notSent is the IO_FAILED of a request that never reached the broker.
func notSent(m wire.Message, why string, cause error) error {
	return wire.Explain(wire.CodeIOFailed, cause, "the %s request was not sent, so nothing was submitted or changed: %s", m.Type(), why)
}

// plainCause is err in the user's words: a coded error's message, a
// system call's errno, or what became of the connection; the chain is
// the error's Detail (shown with --debug).
func plainCause(err error) string {
	var we *wire.Error
	var en syscall.Errno
	switch {
	case errors.As(err, &we):
		return we.Message
	case errors.As(err, &en):
		return en.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the broker closed the connection"
	}
	return "the connection failed"
}

// noAnswer is the error of a request that was sent, or began to be, and
// got no reply (see roundTrip).
func noAnswer(m wire.Message, nc net.Conn, sent, interrupted bool, budget, timeout time.Duration, err error) error {
	if !sent {
		return notSent(m, plainCause(err), err)
	}
	why := err.Error()
	timedOut := errors.Is(err, os.ErrDeadlineExceeded)
	switch {
	case interrupted:
		why = fmt.Sprintf("interrupted before the broker answered the %s request", m.Type())
	case timedOut:
		why = fmt.Sprintf("the broker did not answer the %s request within the reply timeout of %s", m.Type(), timeout)
		if budget > 0 {
			why += fmt.Sprintf(" after its wait of %s", budget.Round(time.Millisecond))
		}
	}
	// Given up on while a stopped broker holds the request, by an
	// interrupt or the timeout, it says so.
	if interrupted || timedOut {
		if pid, stopped := peerStopped(nc); stopped {
			why += fmt.Sprintf(" (its process, pid %d, is stopped; `kill -CONT %d` resumes it)", pid, pid)
		}
	}
	switch m.(type) {
	case *wire.Query, *wire.Wait, *wire.List, *wire.ApprovalWait:
		return wire.Errorf(wire.CodeIOFailed, "%s; the request changes nothing", why)
	case *wire.Approve, *wire.Deny:
		return fmt.Errorf("%s; the broker may have made the decision: look before deciding again", why)
	}
	return fmt.Errorf("%s; the broker may have carried it out: look before trying again", why)
}

// expect converts a reply to the type the request calls for.
func expect[T wire.Message](reply wire.Message, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	t, ok := reply.(T)
	if !ok {
		return zero, fmt.Errorf("broker answered %s, which this request cannot get", reply.Type())
	}
	return t, nil
}
