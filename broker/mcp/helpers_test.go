package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker"
	"warrant/broker/client"
	"warrant/broker/internal/follow"
	"warrant/broker/internal/seam"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/receipt"
	"warrant/wire"
)

// standIn stands in for the runner: it starts no process. An action whose
// first argument is "hold" stays running until it is cancelled; any other
// exits 0 at once with its arguments on stdout. Either way it reports
// through real stream recorders under the broker's HMAC key, so the
// broker seals a real receipt.
type standIn struct {
	t         testing.TB
	hub       *follow.Hub // where its output is published, as the runner's is
	mu        sync.Mutex
	held      map[string]func(wire.Outcome)
	cancelled []string
}

func (s *standIn) Start(_ context.Context, l *runner.Launch, obs runner.Observer) error {
	id := l.Resolved.Identity()
	argv, key, handle := id.Argv, l.MACKey, l.Handle
	defer l.Close()
	now := time.Now()
	obs.Event(lifecycle.Event{Kind: receipt.EventStarted, Wall: now})
	end := func(o wire.Outcome) {
		run := &lifecycle.Result{Outcome: o, Ready: &wire.Ready{LandlockABI: 7, SeccompDigest: bytes.Repeat([]byte{0x5e}, 32),
			Binding: wire.SealedSnapshot, ExecutedSHA256: id.Executable.File.SHA256, Workspace: id.Workspace, Cwd: id.Cwd},
			Pid: 4242, Started: now, RootExited: true, RootExitAt: time.Now(), GroupGone: true, ByCgroup: true,
			GoneAt: time.Now(), StreamsComplete: true}
		res := &wire.Result{Outcome: o, GroupGone: true}
		events := []lifecycle.Event{{Kind: receipt.EventStarted, Wall: now}}
		if o == wire.Exited {
			code, code32 := 0, int32(0)
			run.ExitCode, res.ExitCode = &code, &code32
		} else {
			run.Signal, res.Signal = 15, 15
			res.Error = wire.Errorf(wire.CodeCancelled, "cancelled: test")
			run.Err = res.Error
			events = append(events, lifecycle.Event{Kind: receipt.EventTermSent, Wall: time.Now()})
		}
		events = append(events, lifecycle.Event{Kind: receipt.EventTerminated, Wall: time.Now()})
		out := strings.Join(argv, " ") + "\n"
		if len(argv) == 2 && argv[0] == "bytes" { // "bytes N": N bytes of numbered lines
			n, err := strconv.Atoi(argv[1])
			must(s.t, err)
			out = numbered(n)
		}
		for p := []byte(out); len(p) > 0; {
			k := min(len(p), 64<<10)
			s.hub.Publish(handle, wire.Stdout, p[:k])
			p = p[k:]
		}
		streams := s.record(key, out)
		res.Stdout = wire.Stream{Text: out, ObservedBytes: uint64(len(out)), RedactedBytes: uint64(len(out)), RetainedBytes: uint64(len(out))}
		obs.End(&runner.Observation{Result: res, Run: run, Events: events, Streams: streams})
	}
	if len(argv) > 0 && argv[0] == "hold" {
		s.mu.Lock()
		s.held[l.Handle] = end
		s.mu.Unlock()
		return nil
	}
	end(wire.Exited)
	return nil
}

func (s *standIn) record(key []byte, out string) []*receipt.Captured {
	rules, err := receipt.NewRuleset()
	must(s.t, err)
	var streams []*receipt.Captured
	for _, st := range []receipt.StreamName{receipt.Stdout, receipt.Stderr} {
		rec, err := receipt.NewRecorder(receipt.RecorderConfig{Stream: st, Retain: 64 << 10, Budget: 1 << 20, MACKey: key, Rules: rules})
		must(s.t, err)
		if st == receipt.Stdout {
			io.WriteString(rec, out)
		}
		c, err := rec.Close()
		must(s.t, err)
		streams = append(streams, c)
	}
	return streams
}

func (s *standIn) Cancel(handle, _ string) wire.CancelResult {
	s.mu.Lock()
	end := s.held[handle]
	delete(s.held, handle)
	s.cancelled = append(s.cancelled, handle)
	s.mu.Unlock()
	if end == nil {
		return wire.CancelRejected
	}
	go end(wire.CancelledReaped)
	return wire.CancelAccepted
}

func (s *standIn) wasCancelled(handle string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.cancelled {
		if h == handle {
			return true
		}
	}
	return false
}

// rig is a broker serving real sockets on a temporary state directory
// with the stand-in executor, a workspace, a tool outside it (a copy of
// /bin/true), and the operator's client, which only the test holds.
type rig struct {
	t          *testing.T
	state, ws  string
	tool       string
	exec       *standIn
	operator   *client.Client
	serverLogs *bytes.Buffer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, state: filepath.Join(dir, "state"), ws: filepath.Join(dir, "ws"), tool: filepath.Join(dir, "bin", "tool"),
		exec: &standIn{t: t, hub: follow.New(), held: map[string]func(wire.Outcome){}}, serverLogs: &bytes.Buffer{}}
	must(t, os.Mkdir(r.ws, 0o755))
	must(t, os.Mkdir(filepath.Dir(r.tool), 0o755))
	raw, err := os.ReadFile("/bin/true")
	must(t, err)
	must(t, os.WriteFile(r.tool, raw, 0o755))
	seam.InsecureSkipProbe = true // the stand-in starts nothing: there is nothing to probe
	b, err := broker.Open(context.Background(), broker.Config{StateDir: r.state, Executor: r.exec, Output: r.exec.hub, Logf: t.Logf})
	seam.InsecureSkipProbe = false
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { b.Serve(ctx); close(served) }()
	for range 500 { // the socket file exists from bind(2), a moment before listen(2)
		if r.operator, err = client.Dial(r.state); err == nil {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	must(t, err)
	t.Cleanup(func() {
		r.operator.Close()
		cancel()
		<-served
		b.Close()
	})
	return r
}

// session is one MCP connection to a server of the rig's broker.
type session struct {
	t      *testing.T
	cs     *sdk.ClientSession
	agent  *client.Client
	served chan error
	tools  map[string]*sdk.Tool

	mu       sync.Mutex
	progress []*sdk.ProgressNotificationParams
	asked    []*sdk.ElicitParams
}

// connect serves one connection with cfg (Agent, StateDir and Workspace
// filled in) to a client configured by copts.
func (r *rig) connect(cfg Config, copts *sdk.ClientOptions, version string) *session {
	r.t.Helper()
	agent, err := client.Dial(r.state)
	must(r.t, err)
	cfg.Agent, cfg.StateDir, cfg.Workspace, cfg.Log = &agent.Agent, r.state, r.ws, r.serverLogs
	s := &session{t: r.t, agent: agent, served: make(chan error, 1)}
	if copts == nil {
		copts = &sdk.ClientOptions{}
	}
	copts.ProgressNotificationHandler = func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
		s.mu.Lock()
		s.progress = append(s.progress, req.Params)
		s.mu.Unlock()
	}
	st, ct := sdk.NewInMemoryTransports()
	go func() { s.served <- serve(context.Background(), cfg, st) }()
	s.cs, err = sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, copts).Connect(context.Background(), ct,
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	must(r.t, err)
	r.t.Cleanup(s.close)
	lt, err := s.cs.ListTools(context.Background(), nil)
	must(r.t, err)
	s.tools = map[string]*sdk.Tool{}
	for _, tl := range lt.Tools {
		s.tools[tl.Name] = tl
	}
	return s
}

func (s *session) close() {
	s.cs.Close()
	<-s.served
	s.agent.Close()
}

// call calls a tool; a protocol error fails the test. When the result has
// structured content it must match the tool's output schema, and decodes
// into out (if not nil).
func (s *session) call(name string, args any, out any, opts ...func(*sdk.CallToolParams)) *sdk.CallToolResult {
	s.t.Helper()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	for _, o := range opts {
		o(p)
	}
	res, err := s.cs.CallTool(context.Background(), p)
	if err != nil {
		s.t.Fatalf("call %s: protocol error %v", name, err)
	}
	if res.StructuredContent != nil {
		s.checkOutput(name, res.StructuredContent)
		if out != nil {
			raw, err := json.Marshal(res.StructuredContent)
			must(s.t, err)
			must(s.t, json.Unmarshal(raw, out))
		}
	} else if !res.IsError {
		s.t.Fatalf("call %s: a result without structured content must be an error: %+v", name, res)
	}
	return res
}

func (s *session) checkOutput(name string, v any) {
	s.t.Helper()
	raw, err := json.Marshal(s.tools[name].OutputSchema)
	must(s.t, err)
	var schema jsonschema.Schema
	must(s.t, json.Unmarshal(raw, &schema))
	rs, err := schema.Resolve(nil)
	must(s.t, err)
	if err := rs.Validate(v); err != nil {
		s.t.Fatalf("call %s: structured content does not match the output schema: %v\n%+v", name, err, v)
	}
}

// text is a result's text content.
func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// withProgress asks for progress notifications.
func withProgress(token string) func(*sdk.CallToolParams) {
	return func(p *sdk.CallToolParams) { p.SetProgressToken(token) }
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
