package mcp

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker/view"
	"warrant/wire"
)

// maxPending bounds the approvals one connection remembers; past it the
// oldest is forgotten (the request stays pending at the broker, and a run
// of the same command finds it again).
const maxPending = 64

// poll is how often wait submits a pending request again: the submit that
// finds the lease is what turns an approval into an action.
const poll = 500 * time.Millisecond

// asked is a run that needs approval: what to submit again once a human
// approved it, and the action it then became.
type asked struct {
	id   string
	req  wire.ActionRequest
	call string // the run's call id, submitted again with it
	view *wire.ApprovalView

	mu     sync.Mutex // one submit of it at a time
	handle string     // once the approved submit was accepted
}

// approvalOut tells the agent what the human must do.
type approvalOut struct {
	RequestID      string   `json:"request_id" jsonschema:"the approval request; pass it to wait as approval_id"`
	ApproveCommand string   `json:"approve_command" jsonschema:"what the human runs in a terminal to approve it (the agent cannot)"`
	ReviewCommand  string   `json:"review_command" jsonschema:"what the human runs to see the full approval card"`
	Message        string   `json:"message"`
	Executable     string   `json:"executable" jsonschema:"the program as the broker resolved it"`
	Argv           []string `json:"argv" jsonschema:"its arguments after argv[0]"`
	Cwd            string   `json:"cwd" jsonschema:"relative to the workspace"`
	Fingerprint    string   `json:"fingerprint" jsonschema:"what the approval binds, in hex"`
	Egress         []string `json:"egress" jsonschema:"the exact host:port entries the program may connect to if the human approves as asked (presets expanded); empty: no network. The human may grant another list"`
}

// ask remembers the run that raised v.
func (c *conn) ask(v *wire.ApprovalView, req wire.ActionRequest, call string) *asked {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.approvals[v.ID]; a != nil {
		return a
	}
	a := &asked{id: v.ID, req: req, call: call, view: v}
	c.approvals[v.ID] = a
	c.order = append(c.order, v.ID)
	if len(c.order) > maxPending {
		delete(c.approvals, c.order[0])
		delete(c.nudged, c.order[0])
		c.order = c.order[1:]
	}
	return a
}

func (c *conn) lookup(id string) *asked {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.approvals[id]
}

// approvalRequired reports a's request as pending.
func (c *conn) approvalRequired(a *asked, start time.Time, timedOut bool) (*actionOut, string, error) {
	out := c.approvalOut(a)
	return &actionOut{State: stateApproval, WaitTimeout: timedOut, ElapsedMs: since(start), Approval: out}, out.Message, nil
}

func (c *conn) approvalOut(a *asked) *approvalOut {
	id := &a.view.Identity
	state := view.ShellQuote(c.cfg.StateDir)
	o := &approvalOut{RequestID: a.id, ApproveCommand: "broker approve " + a.id + " --state " + state,
		ReviewCommand: "broker approvals --state " + state, Executable: id.Executable.File.Path, Argv: view.NonNil(id.Argv),
		Cwd: id.Cwd.Path, Fingerprint: hex.EncodeToString(a.view.Fingerprint), Egress: view.NonNil(id.Egress)}
	if len(o.Egress) > 0 {
		o.Message = fmt.Sprintf("Approval required: nothing ran. A human must approve this command outside the agent; you cannot approve it. "+
			"Tell them what you asked to run (%s) and the network access you asked for (%s), and that they can review it with `%s` "+
			"and approve it with `%s` (or with `--egress HOST:PORT,...` to grant another list, `--egress none` for none; "+
			"no program contract covers a command with network access). Then call wait with approval_id %s.",
			view.CommandLine(o.Executable, o.Argv), strings.Join(o.Egress, ", "), o.ReviewCommand, o.ApproveCommand, a.id)
		return o
	}
	o.Message = fmt.Sprintf("Approval required: nothing ran. A human must approve this command outside the agent; you cannot approve it. "+
		"Tell them what you asked to run (%s) and that they can review it with `%s` and approve it with `%s` "+
		"(or see which program contract would cover it and the later commands like it: `broker contracts offer %s --state %s`). "+
		"Then call wait with approval_id %s.", view.CommandLine(o.Executable, o.Argv), o.ReviewCommand, o.ApproveCommand, a.id, state, a.id)
	return o
}

// awaitApproval waits for a human's decision on the request id, which a
// run of this connection raised, by submitting the same request again;
// once it is accepted it follows the action for the rest of the budget.
func (c *conn) awaitApproval(ctx context.Context, req *sdk.CallToolRequest, p *progress, id string, from outputFrom, start time.Time, budget time.Duration) (*actionOut, string, error) {
	a := c.lookup(id)
	if a == nil {
		return nil, "", wire.Errorf(wire.CodeArgumentsInvalid,
			"approval request %q was not asked for on this connection: call run with the command again", id)
	}
	nctx, stop := context.WithCancel(ctx)
	defer stop()
	c.nudge(nctx, req.Session, a)
	deadline := start.Add(budget)
	for {
		handle, next, err := c.resubmit(a)
		switch {
		case err != nil:
			return c.refused(err, start)
		case next != nil: // the command's identity changed: a new request
			return c.approvalRequired(next, start, false)
		case handle != "":
			return c.follow(ctx, p, handle, from, start, max(time.Until(deadline), 0))
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return c.approvalRequired(a, start, true)
		}
		p.approval(ctx, a.id)
		select {
		case <-ctx.Done():
		case <-time.After(min(left, poll)):
		}
	}
}

// resubmit submits a's request again: the action's handle once approved,
// nothing while the request is pending, or the new request that an
// identity change raised.
func (c *conn) resubmit(a *asked) (string, *asked, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.handle != "" {
		return a.handle, nil, nil
	}
	s, err := c.cfg.Agent.SubmitCall(c.cfg.Workspace, a.req, a.call)
	switch {
	case err != nil:
		return "", nil, err
	case s.Approval == nil:
		a.handle = s.Handle
		c.started(s)
		return s.Handle, nil, nil
	case s.Approval.ID != a.id:
		return "", c.ask(s.Approval, a.req, a.call), nil
	}
	return "", nil, nil
}

// nudge shows the pending request to the human through the client, once
// per request, when the client supports elicitation on a protocol version
// that lets a server ask (before 2026-07-28). It is only a nudge: the
// answer is logged and ignored, and approval stays the operator's.
func (c *conn) nudge(ctx context.Context, ss *sdk.ServerSession, a *asked) {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil || ip.ProtocolVersion >= "2026-07-28" {
		return
	}
	c.mu.Lock()
	done := c.nudged[a.id]
	c.nudged[a.id] = true
	c.mu.Unlock()
	if done {
		return
	}
	o := c.approvalOut(a)
	msg := fmt.Sprintf("The agent asked warrant to run:\n\n    %s\n    in %s (cwd %s)\n\n"+
		"It runs only once you approve it in a terminal:\n\n    %s\n\nSee the whole card with `%s`. Answering here approves nothing.",
		view.CommandLine(o.Executable, o.Argv), c.cfg.Workspace, o.Cwd, o.ApproveCommand, o.ReviewCommand)
	go func() {
		res, err := ss.Elicit(ctx, &sdk.ElicitParams{Message: msg, RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}})
		switch {
		case ctx.Err() != nil:
			c.logf("approval request %s: elicitation withdrawn: the wait ended", a.id)
		case err != nil:
			c.logf("approval request %s: elicitation: %v", a.id, err)
		default:
			c.logf("approval request %s: the client answered %q to the elicitation; ignored: approval is `broker approve %s`", a.id, res.Action, a.id)
		}
	}()
}
