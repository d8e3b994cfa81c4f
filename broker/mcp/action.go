package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker/view"
	"warrant/wire"
)

// The wait budget of run and wait: the default, and the cap, which stays
// under the 60 s request timeout MCP clients commonly default to.
const (
	defaultWait = 30 * time.Second
	maxWait     = 50 * time.Second
	tick        = time.Second // between progress notifications
)

// The states an action result reports: the broker's action states, and
// two of this server's own before there is an action.
const (
	stateApproval = "approval_required" // a human must approve; nothing ran
	stateRefused  = "refused"           // the broker refused the submit; nothing ran
)

type runIn struct {
	Executable string   `json:"executable" jsonschema:"the program: a name found on the broker's sanitized PATH, an absolute path, or a workspace path with a slash (./gradlew, .venv/bin/python)"`
	Argv       []string `json:"argv,omitempty" jsonschema:"its arguments after argv[0], each passed literally: there is no shell"`
	Cwd        string   `json:"cwd,omitempty" jsonschema:"the working directory, relative to the workspace (default .)"`
	Profile    string   `json:"profile,omitempty" jsonschema:"the resource bundle: short, standard or long (default short)"`
	Step       string   `json:"step,omitempty" jsonschema:"the step of this server's goal the action belongs to; it starts only when the step's dependencies are VERIFIED_DONE (else STEP_BLOCKED)"`
	WaitMs     *int64   `json:"wait_ms,omitempty" jsonschema:"how long to wait for the end, in milliseconds (default 30000, at most 50000); the action keeps running after it"`
	CallID     string   `json:"call_id,omitempty" jsonschema:"makes the run idempotent on this connection's session: run again with the same call_id and the same command never starts it twice, it answers the first run's action (or its pending approval); the same call_id with another command is refused"`
	Egress     []string `json:"egress,omitempty" jsonschema:"network access to propose, which a human approves or changes: host:port entries (registry.npmjs.org:443; no wildcards) or names of presets the operator defined (npm). Without it the program has no network. The approval card shows the exact list; once approved, the program reaches exactly those hosts, through the broker's proxy (HTTPS_PROXY and the like are set), and its result lists each connection"`
	outputFrom
}

type waitIn struct {
	Handle     string `json:"handle,omitempty" jsonschema:"the action to wait for"`
	ApprovalID string `json:"approval_id,omitempty" jsonschema:"or: the approval request a run of this connection returned; once a human approved it, the same command is submitted and runs"`
	WaitMs     *int64 `json:"wait_ms,omitempty" jsonschema:"how long to wait, in milliseconds (default 30000, at most 50000)"`
	outputFrom
}

type statusIn struct {
	Handle string `json:"handle" jsonschema:"the action"`
}

// actionOut is what run, wait and status return.
type actionOut struct {
	State       string       `json:"state" jsonschema:"approval_required, refused, accepted, running, terminal or unknown"`
	Handle      *string      `json:"handle" jsonschema:"the action, once the broker accepted it"`
	WaitTimeout bool         `json:"wait_timeout" jsonschema:"the wait ran out while the action was still going or the approval still pending: not a failure"`
	ElapsedMs   int64        `json:"elapsed_ms" jsonschema:"how long this call took"`
	Approval    *approvalOut `json:"approval" jsonschema:"set when a human must approve"`
	Result      *view.Action `json:"result" jsonschema:"once the action ended, or when the broker refused it: the object broker run --json prints"`
	Output      *outputOut   `json:"output" jsonschema:"with stdout_from or stderr_from: the next page of each stream asked for; it returns as soon as a page is full"`
}

var runTool = tool[runIn, actionOut]{
	name:  "run",
	title: "Run a program under warrant",
	description: "Runs one program in the workspace inside warrant's sandbox (no network unless egress proposes hosts and a human approves them; the workspace read-write; a private HOME and TMPDIR), " +
		"under a lease a human granted, and waits up to wait_ms for it to end. Returns exit code, signal, redacted and bounded stdout/stderr with exact byte counts, and the id of its signed receipt. " +
		"If no lease covers the command yet it returns at once with state approval_required: a human must approve it outside the agent with the command shown; then call wait with the approval_id. " +
		"wait_timeout means it is still running: call wait with the handle.",
	destructive: true, // the program may change the workspace
	patchIn: func(s *jsonschema.Schema) {
		p := s.Properties
		p["executable"].MinLength, p["executable"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(4096)
		p["argv"].Types, p["argv"].Type = nil, "array" // absent or a list, never null
		p["argv"].MaxItems = jsonschema.Ptr(wire.MaxArgs)
		p["argv"].Items.MaxLength = jsonschema.Ptr(wire.MaxArgBytes)
		p["cwd"].MaxLength = jsonschema.Ptr(4096)
		p["step"].MaxLength = jsonschema.Ptr(256)
		p["profile"].Enum = []any{"short", "standard", "long"}
		p["call_id"].MaxLength = jsonschema.Ptr(256)
		p["egress"].Types, p["egress"].Type = nil, "array" // absent or a list, never null
		p["egress"].MaxItems = jsonschema.Ptr(wire.MaxEgress)
		p["egress"].Items.MinLength, p["egress"].Items.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(wire.MaxEgressEntry)
		budgetSchema(p["wait_ms"])
		offsetSchema(p["stdout_from"])
		offsetSchema(p["stderr_from"])
	},
	patchOut: patchAction,
}

var waitTool = tool[waitIn, actionOut]{
	name:  "wait",
	title: "Wait for an action or an approval",
	description: "Waits up to wait_ms for an action (handle) to end, or for a human to approve a request this connection's run asked for (approval_id): " +
		"once approved, the same command is submitted and runs, and the wait continues on it. Give handle or approval_id. " +
		"wait_timeout is not a failure: call wait again.",
	destructive: true, // on an approval, it starts the approved program
	idempotent:  true, // a second wait on the same approval follows the same action
	patchIn: func(s *jsonschema.Schema) {
		s.Properties["handle"].MaxLength = jsonschema.Ptr(256)
		s.Properties["approval_id"].MaxLength = jsonschema.Ptr(256)
		budgetSchema(s.Properties["wait_ms"])
		offsetSchema(s.Properties["stdout_from"])
		offsetSchema(s.Properties["stderr_from"])
	},
	patchOut: patchAction,
}

var statusTool = tool[statusIn, actionOut]{
	name:        "status",
	title:       "Action status",
	description: "The state of an action, and its result (the same object run returns) once it ended.",
	readOnly:    true, idempotent: true,
	patchIn: func(s *jsonschema.Schema) {
		s.Properties["handle"].MinLength, s.Properties["handle"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(256)
	},
	patchOut: patchAction,
}

func budgetSchema(s *jsonschema.Schema) {
	s.Types, s.Type = nil, "integer"
	s.Minimum, s.Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(float64(maxWait.Milliseconds()))
	s.Default = []byte(fmt.Sprint(defaultWait.Milliseconds()))
}

// patchAction closes the enumerations of an action result.
func patchAction(s *jsonschema.Schema) {
	s.Properties["state"].Enum = []any{stateApproval, stateRefused, wire.StateAccepted.String(), wire.StateRunning.String(),
		wire.StateTerminal.String(), wire.StateUnknown.String()}
	var outcomes []any
	for o := wire.KnownNotExecuted; o <= wire.OutcomeUnknown; o++ {
		outcomes = append(outcomes, o.String())
	}
	for _, list := range []string{"argv", "egress"} {
		ap := s.Properties["approval"].Properties[list]
		ap.Types, ap.Type = nil, "array"
	}
	res := s.Properties["result"]
	res.Properties["outcome"].Enum = outcomes
	res.Properties["protected_changes"].Types, res.Properties["protected_changes"].Type = nil, "array"
}

func budget(ms *int64) time.Duration {
	if ms == nil {
		return defaultWait
	}
	return min(max(time.Duration(*ms)*time.Millisecond, 0), maxWait)
}

func (c *conn) run(ctx context.Context, req *sdk.CallToolRequest, in runIn) (*actionOut, string, error) {
	start := time.Now()
	if in.Cwd == "" {
		in.Cwd = "."
	}
	if in.Profile == "" {
		in.Profile = wire.ProfileShort.String()
	}
	profile, err := wire.ParseEnum[wire.Profile](in.Profile)
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeArgumentsInvalid, "profile must be short, standard or long, not %q", in.Profile)
	}
	if in.Argv == nil {
		in.Argv = []string{}
	}
	ar := wire.ActionRequest{Executable: in.Executable, Argv: in.Argv, Cwd: in.Cwd, Profile: profile,
		Goal: c.cfg.Goal, Session: c.session, Step: in.Step, Egress: in.Egress}
	s, err := c.cfg.Agent.SubmitCall(c.cfg.Workspace, ar, in.CallID)
	if err != nil {
		return c.refused(err, start)
	}
	if s.Approval != nil {
		return c.approvalRequired(c.ask(s.Approval, ar, in.CallID), start, false)
	}
	c.started(s)
	return c.follow(ctx, newProgress(req, c.cfg.Meter, start), s.Handle, in.outputFrom, start, budget(in.WaitMs))
}

func (c *conn) wait(ctx context.Context, req *sdk.CallToolRequest, in waitIn) (*actionOut, string, error) {
	start := time.Now()
	p := newProgress(req, c.cfg.Meter, start)
	switch {
	case (in.Handle == "") == (in.ApprovalID == ""):
		return nil, "", wire.Errorf(wire.CodeArgumentsInvalid, "give either handle or approval_id")
	case in.Handle != "":
		return c.follow(ctx, p, in.Handle, in.outputFrom, start, budget(in.WaitMs))
	}
	return c.awaitApproval(ctx, req, p, in.ApprovalID, in.outputFrom, start, budget(in.WaitMs))
}

func (c *conn) status(_ context.Context, _ *sdk.CallToolRequest, in statusIn) (*actionOut, string, error) {
	start := time.Now()
	st, err := c.cfg.Agent.Query(in.Handle)
	if err != nil {
		return nil, "", err
	}
	return c.outcome(in.Handle, st, st.State, start)
}

// follow waits on handle until it ends or the budget from start runs out,
// notifying progress each tick; with offsets in from, it pages the
// output too (page).
func (c *conn) follow(ctx context.Context, p *progress, handle string, from outputFrom, start time.Time, budget time.Duration) (*actionOut, string, error) {
	if from.paged() {
		return c.page(ctx, p, handle, from, start, budget)
	}
	deadline := start.Add(budget)
	for {
		left := max(time.Until(deadline), 0)
		st, state, err := c.cfg.Agent.Wait(handle, min(left, tick))
		if err != nil {
			return c.lost(handle, err, start)
		}
		if st != nil || left <= tick || ctx.Err() != nil {
			return c.outcome(handle, st, state, start)
		}
		p.running(ctx, handle, state)
	}
}

// outcome reports st, or (st nil) a wait that ran out in state.
func (c *conn) outcome(handle string, st *wire.Status, state wire.ActionState, start time.Time) (*actionOut, string, error) {
	o := &actionOut{State: state.String(), Handle: &handle, ElapsedMs: since(start)}
	if st == nil || st.Result == nil {
		o.WaitTimeout = st == nil
		return o, fmt.Sprintf("Action %s is %s after %d ms; wait_timeout is not a failure. Call wait with this handle to keep waiting, or cancel it.",
			handle, state, o.ElapsedMs), nil
	}
	use := c.use(handle)
	c.ended(handle)
	e := view.Ending{Handle: handle, Status: st, Use: use}
	a := e.Action()
	o.Result = &a
	return o, actionText(&a), nil
}

// lost reports a wait that failed: a coded refusal (no such action) is
// only that, but an answer lost in transit means this client no longer
// knows the action's fate.
func (c *conn) lost(handle string, err error, start time.Time) (*actionOut, string, error) {
	var we *wire.Error
	if errors.As(err, &we) {
		return nil, "", err
	}
	e := view.Ending{Handle: handle, Err: err}
	a := e.Action()
	return &actionOut{State: wire.StateUnknown.String(), Handle: &handle, ElapsedMs: since(start), Result: &a}, a.Summary(), err
}

// refused reports a submit the broker refused (or whose answer was lost).
// The text is the summary without the error, which toolResult puts first.
func (c *conn) refused(err error, start time.Time) (*actionOut, string, error) {
	e := view.Ending{Err: err}
	a := e.Action()
	o := &actionOut{State: stateRefused, ElapsedMs: since(start), Result: &a}
	rest := a
	rest.Error = nil
	if e.LostSight() {
		o.State = wire.StateUnknown.String()
		return o, "The broker's answer was lost: the action may have been accepted, and its outcome is unknown. " + rest.Summary(), err
	}
	return o, "Nothing ran: " + rest.Summary(), err
}

// actionText renders an ended action: the summary, then each stream.
func actionText(a *view.Action) string {
	text := a.Summary()
	for _, s := range []struct {
		name string
		s    *view.Stream
	}{{"stdout", a.Stdout}, {"stderr", a.Stderr}} {
		if s.s == nil || s.s.ObservedBytes == 0 {
			continue
		}
		text += fmt.Sprintf("\n--- %s (%d bytes observed) ---\n%s", s.name, s.s.ObservedBytes, s.s.Text)
	}
	return text
}

func since(t time.Time) int64 { return time.Since(t).Milliseconds() }

type cancelIn struct {
	Handle string `json:"handle" jsonschema:"the action"`
	Reason string `json:"reason,omitempty" jsonschema:"why, for the journal"`
}

type cancelOut struct {
	Handle string `json:"handle"`
	Result string `json:"result" jsonschema:"accepted, rejected, already_terminal or unknown"`
}

var cancelTool = tool[cancelIn, cancelOut]{
	name:  "cancel",
	title: "Cancel an action",
	description: "Asks the broker to end an action: its whole process group is terminated, then killed after a grace period. Nothing it did is undone. " +
		"Cancelling an action that already ended changes nothing (already_terminal). Call wait for its end.",
	destructive: true, idempotent: true,
	patchIn: func(s *jsonschema.Schema) {
		s.Properties["handle"].MinLength, s.Properties["handle"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(256)
		s.Properties["reason"].MaxLength = jsonschema.Ptr(1024)
	},
	patchOut: func(s *jsonschema.Schema) {
		var results []any
		for r := wire.CancelAccepted; r <= wire.CancelUnknown; r++ {
			results = append(results, r.String())
		}
		s.Properties["result"].Enum = results
	},
}

func (c *conn) cancel(_ context.Context, _ *sdk.CallToolRequest, in cancelIn) (*cancelOut, string, error) {
	if in.Reason == "" {
		in.Reason = "cancelled by the agent through MCP"
	}
	res, err := c.cfg.Agent.Cancel(in.Handle, in.Reason)
	if err != nil {
		return nil, "", err
	}
	text := map[wire.CancelResult]string{
		wire.CancelAccepted:        "The broker is ending the action's process group; nothing it did is undone. Call wait with this handle for its end.",
		wire.CancelRejected:        "The broker did not accept the cancel.",
		wire.CancelAlreadyTerminal: "The action had already ended; nothing changed.",
		wire.CancelUnknown:         "The action's outcome is unknown; nothing changed.",
	}[res]
	return &cancelOut{Handle: in.Handle, Result: res.String()}, fmt.Sprintf("cancel %s: %s. %s", in.Handle, res, text), nil
}
