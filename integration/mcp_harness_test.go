//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker/view"
)

// The MCP tests drive `broker mcp` over stdio with clients nobody here
// wrote, installed from npm at the versions integration/mcp/package-lock.json
// pins (`npm ci --prefix integration/mcp`; .ci/run does it): the official
// TypeScript SDK's Client and StdioClientTransport, through
// integration/mcp/driver.mjs, and the Inspector's CLI. The Go SDK's
// client (goClient) speaks the newest revision the SDK serves.

// mcpDir is where the npm packages are installed.
const mcpDir = "mcp"

// needNodeModules skips the test, saying why, unless node and the pinned
// packages are installed; under CI (which installs them) their absence
// fails it instead, so that CI never skips these tests.
func needNodeModules(t *testing.T) {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("node"); err != nil {
		why = "node is not on PATH"
	}
	for _, p := range []string{"@modelcontextprotocol/sdk/package.json", "@modelcontextprotocol/inspector/package.json"} {
		if _, err := os.Stat(filepath.Join(mcpDir, "node_modules", p)); why == "" && err != nil {
			why = "integration/mcp/node_modules lacks " + filepath.Dir(p) + " (run `npm ci --prefix integration/mcp`)"
		}
	}
	switch {
	case why == "":
	case os.Getenv("CI") != "":
		t.Fatalf("%s; CI installs them in .ci/run", why)
	default:
		t.Skipf("skip: %s", why)
	}
}

// mcpServer is the argv of `broker mcp` for state and workspace ws. The
// clients start it with an environment of their own (the TypeScript SDK
// passes only HOME, PATH and a few more), so everything is a flag.
func mcpServer(state, ws string, extra ...string) []string {
	return append([]string{bins.broker, "mcp", "--state", state, "--workspace", ws, "--launcher", bins.launcher}, extra...)
}

// tsClient is one driver.mjs process: one MCP client connected to one
// `broker mcp` it started.
type tsClient struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan []byte
	log   *syncBuffer
	done  chan struct{}
}

// startTS starts the TypeScript client on the server argv.
func startTS(t *testing.T, server []string) *tsClient {
	t.Helper()
	needNodeModules(t)
	argv, err := json.Marshal(server)
	if err != nil {
		t.Fatal(err)
	}
	c := &tsClient{t: t, cmd: exec.Command("node", filepath.Join(mcpDir, "driver.mjs")), lines: make(chan []byte, 1),
		log: &syncBuffer{}, done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), "WARRANT_MCP_SERVER="+string(argv))
	c.cmd.Stderr = c.log
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			c.lines <- slices.Clone(sc.Bytes())
		}
		close(c.lines)
	}()
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(c.close)
	return c
}

// do sends one operation and decodes its answer into out.
func (c *tsClient) do(op map[string]any, out any) {
	c.t.Helper()
	line, err := json.Marshal(op)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		c.t.Fatalf("driver: %v\n%s", err, c.log)
	}
	select {
	case answer, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("the driver exited before answering %s\n%s", op["op"], c.log)
		}
		if err := json.Unmarshal(answer, out); err != nil {
			c.t.Fatalf("driver answer %.500s: %v", answer, err)
		}
	case <-time.After(daemonSafety):
		c.t.Fatalf("no answer to %s within %s\n%s", op["op"], daemonSafety, c.log)
	}
}

// close ends the client, which closes the server's stdin, and waits for
// both.
func (c *tsClient) close() {
	select {
	case <-c.done:
		return
	default:
	}
	line, _ := json.Marshal(map[string]any{"op": "close"})
	c.in.Write(append(line, '\n'))
	select {
	case <-c.lines:
	case <-time.After(daemonSafety):
	}
	c.in.Close()
	select {
	case <-c.done:
	case <-time.After(daemonSafety):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// called is one tools/call as the client saw it: its result, or the
// protocol error it raised, and the progress notifications that came.
type called struct {
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Progress []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	} `json:"progress"`
}

// text is the result's text content.
func (c *called) text() string {
	var b bytes.Buffer
	if c.Result != nil {
		for _, x := range c.Result.Content {
			b.WriteString(x.Text)
		}
	}
	return b.String()
}

// mcpAction is the structured result of run, wait and status.
type mcpAction struct {
	State       string  `json:"state"`
	Handle      *string `json:"handle"`
	WaitTimeout bool    `json:"wait_timeout"`
	Approval    *struct {
		RequestID      string `json:"request_id"`
		ApproveCommand string `json:"approve_command"`
	} `json:"approval"`
	Result *view.Action `json:"result"`
}

// call makes one tools/call; a protocol error fails the test.
func (c *tsClient) call(name string, args map[string]any, progress bool) *called {
	c.t.Helper()
	var r called
	c.do(map[string]any{"op": "call", "name": name, "arguments": args, "progress": progress}, &r)
	if r.Error != nil || r.Result == nil {
		c.t.Fatalf("tools/call %s: %+v\n%s", name, r.Error, c.log)
	}
	return &r
}

// action makes a run, wait or status call that must not be a tool error.
func (c *tsClient) action(name string, args map[string]any) *mcpAction {
	c.t.Helper()
	return c.call(name, args, false).succeeded(c.t, name, args)
}

// succeeded decodes the structured result of the run, wait or status
// call name with args, which must not be a tool error.
func (c *called) succeeded(t *testing.T, name string, args map[string]any) *mcpAction {
	t.Helper()
	if c.Result.IsError {
		t.Fatalf("tools/call %s %v: tool error %s", name, args, c.text())
	}
	return c.action(t)
}

// action decodes the structured result of run, wait or status.
func (c *called) action(t *testing.T) *mcpAction {
	t.Helper()
	var a mcpAction
	if err := json.Unmarshal(c.Result.StructuredContent, &a); err != nil {
		t.Fatalf("structured content: %v: %s", err, c.Result.StructuredContent)
	}
	return &a
}

// inspector runs the Inspector's CLI on the server argv with args (its
// --method and the rest) and returns its stdout, stderr and exit status.
func inspector(t *testing.T, server []string, args ...string) (string, string, int) {
	t.Helper()
	needNodeModules(t)
	cmd := exec.Command(filepath.Join(mcpDir, "node_modules", ".bin", "mcp-inspector"), slices.Concat([]string{"--cli"}, server, args)...)
	cmd.Env = append(os.Environ(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "catalog.json"))
	return outputs(t, cmd)
}

// goClient is the Go SDK's Client on one `broker mcp` it started with
// its CommandTransport (stdio).
type goClient struct {
	t   *testing.T
	cs  *sdk.ClientSession
	log *syncBuffer // the server's stderr
}

// startGo connects the Go SDK's client to the server argv, asking for
// protocol revision version ("" for the SDK's newest) with capabilities
// caps (nil for the SDK's defaults). The test's cleanup closes it.
func startGo(t *testing.T, server []string, version string, caps *sdk.ClientCapabilities) *goClient {
	t.Helper()
	c := &goClient{t: t, log: &syncBuffer{}}
	cmd := exec.Command(server[0], server[1:]...)
	cmd.Stderr = c.log
	ctx, cancel := context.WithTimeout(context.Background(), daemonSafety)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "warrant-integration", Version: "1.0.0"}, &sdk.ClientOptions{Capabilities: caps}).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect to broker mcp: %v\n%s", err, c.log)
	}
	c.cs = cs
	t.Cleanup(func() { cs.Close() })
	return c
}

// tools lists the server's tools as tools/list shows them.
func (c *goClient) tools() []listedTool {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), daemonSafety)
	defer cancel()
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		c.t.Fatalf("tools/list: %v\n%s", err, c.log)
	}
	var tools []listedTool
	recode(c.t, res.Tools, &tools)
	return tools
}

// call makes one tools/call; a protocol error fails the test.
func (c *goClient) call(name string, args map[string]any) *called {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), daemonSafety)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("tools/call %s: %v\n%s", name, err, c.log)
	}
	var r called
	recode(c.t, res, &r.Result)
	return &r
}

// action makes a run, wait or status call that must not be a tool error.
func (c *goClient) action(name string, args map[string]any) *mcpAction {
	c.t.Helper()
	return c.call(name, args).succeeded(c.t, name, args)
}

// recode decodes v's JSON into out: what the SDK decoded, as a client
// that only reads the wire sees it.
func recode(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		t.Fatalf("recode %T: %v", v, err)
	}
}
