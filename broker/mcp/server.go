package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker/client"
	"warrant/broker/view"
)

// Config is what one server serves: which broker, which workspace, on
// whose behalf. It holds no operator power.
type Config struct {
	Agent     *client.Agent // the broker's agent.sock
	StateDir  string        // absolute: the receipt log (read-only) and the commands shown to the human
	Workspace string        // absolute, symlinks resolved: every action runs here
	Session   string        // "": one session per connection
	Goal      string        // "": the default goal
	// Embedded says the broker runs in this process and closes with it:
	// actions this connection left running are cancelled when it ends.
	Embedded bool
	Meter    *Meter    // the output an embedded broker releases, or nil
	Log      io.Writer // diagnostics; never the protocol stream
}

// conn is the state of one MCP connection.
type conn struct {
	cfg     *Config
	session string
	logf    func(format string, a ...any)

	mu        sync.Mutex
	approvals map[string]*asked   // approval request id → the run that raised it
	order     []string            // approvals, oldest first
	nudged    map[string]bool     // approval ids shown through elicitation
	open      map[string]bool     // handles submitted here and not yet seen ended
	used      map[string]view.Use // handle → the lease (or contract grant) its submit consumed a use of
}

// ServeStream serves one MCP connection on r and w (stdin and stdout:
// newline-delimited JSON-RPC) until the client closes r or ctx is done.
// w carries protocol frames only.
func ServeStream(ctx context.Context, cfg Config, r io.Reader, w io.Writer) error {
	return serve(ctx, cfg, &lineTransport{r: r, w: w})
}

// serve serves one MCP connection on t.
func serve(ctx context.Context, cfg Config, t sdk.Transport) error {
	c := &conn{cfg: &cfg, approvals: map[string]*asked{}, nudged: map[string]bool{}, open: map[string]bool{}, used: map[string]view.Use{},
		logf: func(format string, a ...any) { fmt.Fprintf(cfg.Log, "broker mcp: "+format+"\n", a...) }}
	c.session = cfg.Session
	if c.session == "" {
		c.session = newSession()
	}
	c.logf("session %s, workspace %s, state %s", c.session, cfg.Workspace, cfg.StateDir)
	s := sdk.NewServer(&sdk.Implementation{Name: "warrant", Title: "warrant broker", Version: version()}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	c.register(s)
	err := s.Run(ctx, t)
	if cfg.Embedded {
		c.cancelOpen()
	}
	return err
}

// version is this binary's module version, as the client is told.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "(devel)"
}

// instructions tell the agent how the tools fit together.
const instructions = `warrant runs local programs for you inside a sandbox (no network; the system's runtime paths read-only; the workspace, its cache and a private HOME and TMPDIR read-write; nothing else), each under a lease a human grants, and keeps a signed receipt of every run.
Call run with the executable and its arguments (no shell: pass argv literally). If the result says approval_required, tell the human which command you asked for and that they approve it outside this conversation with the command shown; then call wait with the approval_id. You cannot approve anything yourself.
wait_timeout means the action is still going, not that it failed: call wait again with the handle, or cancel it.`

// newSession names a connection's session: one per connection, so that
// its actions are its own on the approval card and for BUSY.
func newSession() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("mcp: internal error: " + err.Error()) // crypto/rand does not fail
	}
	return "mcp-" + hex.EncodeToString(b[:])
}

// register adds the tools.
func (c *conn) register(s *sdk.Server) {
	addTool(s, c, runTool, c.run)
	addTool(s, c, waitTool, c.wait)
	addTool(s, c, statusTool, c.status)
	addTool(s, c, cancelTool, c.cancel)
	addTool(s, c, receiptTool, c.receipt)
	addTool(s, c, goalStatusTool, c.goalStatus)
	addTool(s, c, goalVerifyTool, c.goalVerify)
}

// started records a handle this connection submitted, and the use its
// submit consumed.
func (c *conn) started(s client.Submitted) {
	c.mu.Lock()
	c.open[s.Handle] = true
	if s.Lease != "" {
		c.used[s.Handle] = view.Use{Lease: s.Lease, UsesLeft: s.UsesLeft, Contract: s.Contract}
	}
	c.mu.Unlock()
}

// use is the use handle's submit consumed, when this connection made it.
func (c *conn) use(handle string) view.Use {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used[handle]
}

// ended forgets a handle once it is terminal or unknown.
func (c *conn) ended(handle string) {
	c.mu.Lock()
	delete(c.open, handle)
	c.mu.Unlock()
	c.cfg.Meter.forget(handle)
}

// cancelOpen cancels the actions this connection left running, before an
// embedded broker closes (which waits for them): cancel is not abandon,
// and a run must not outlive the agent that asked for it by its whole
// wall limit.
func (c *conn) cancelOpen() {
	c.mu.Lock()
	handles := make([]string, 0, len(c.open))
	for h := range c.open {
		handles = append(handles, h)
	}
	c.mu.Unlock()
	for _, h := range handles {
		res, err := c.cfg.Agent.Cancel(h, "the MCP client disconnected; the embedded broker closes with broker mcp")
		if err != nil {
			c.logf("cancel %s at disconnect: %v", h, err)
			continue
		}
		c.logf("cancel %s at disconnect: %s", h, res)
	}
}
