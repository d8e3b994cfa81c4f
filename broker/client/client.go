package client

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"warrant/wire"
)

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
	mu   sync.Mutex
	path string
	c    net.Conn
}

// Dial returns a client for the broker of stateDir, checking that its
// agent socket answers. Connections are made on first use and remade
// after an error.
func Dial(stateDir string) (*Client, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("dial broker: %w", err)
	}
	a, o := SocketPaths(abs)
	cl := &Client{Agent: Agent{sock: conn{path: a}}, operator: conn{path: o}}
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

// roundTrip sends m and reads one reply. A *wire.Error reply is returned
// as the error. A message that does not encode (a field over its cap, a
// NUL byte) is ARGUMENTS_INVALID, and nothing is sent.
func (c *conn) roundTrip(m wire.Message) (wire.Message, error) {
	frame, err := wire.EncodeFrame(m)
	if err != nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "%v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.connect(); err != nil {
		return nil, err
	}
	reply, err := exchange(c.c, m.Type(), frame)
	if err != nil {
		c.c.Close()
		c.c = nil
		return nil, err
	}
	if e, ok := reply.(*wire.Error); ok {
		return nil, e
	}
	return reply, nil
}

func exchange(nc net.Conn, t wire.MsgType, frame []byte) (wire.Message, error) {
	if _, err := nc.Write(frame); err != nil {
		return nil, fmt.Errorf("send %s: %w", t, err)
	}
	reply, err := wire.ReadFrame(nc, wire.MaxAgentFrame, wire.ReplyChannel)
	if err != nil {
		return nil, fmt.Errorf("read reply to %s: %w", t, err)
	}
	return reply, nil
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
