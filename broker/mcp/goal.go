package mcp

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker/internal/goals"
	"warrant/broker/internal/journal"
	"warrant/wire"
)

// The goal tools: an agent may read where its goal stands (goal_status)
// and ask the broker's evidence oracle to judge it (goal_verify). Neither
// changes anything of the host or the goal; goal_verify records its
// signed verdict in the receipt log, as every verdict is recorded.

type goalIn struct {
	Goal string `json:"goal,omitempty" jsonschema:"the goal id; default: this server's goal"`
}

type goalOut struct {
	Goal     string         `json:"goal"`
	Revision uint64         `json:"revision"`
	State    string         `json:"state" jsonschema:"active, paused or cancelled"`
	Status   string         `json:"status" jsonschema:"VERIFIED_DONE, NOT_DONE, UNVERIFIED (no verdict under the current revision) or NO_CRITERIA"`
	Summary  string         `json:"summary" jsonschema:"each step and criterion as the latest verdict found them"`
	View     map[string]any `json:"view" jsonschema:"the goal's document and latest verdict under its current revision (docs/goals.md)"`
}

var goalStatusTool = tool[goalIn, goalOut]{
	name:  "goal_status",
	title: "Goal status",
	description: "Where a goal stands under its current revision: its steps and mandatory criteria, and the latest signed verdict of the broker's " +
		"evidence oracle. Only that verdict makes a goal VERIFIED_DONE; printing \"done\" or exiting 0 does not.",
	readOnly: true, idempotent: true,
	patchIn: goalSchema,
}

var goalVerifyTool = tool[goalIn, goalOut]{
	name:  "goal_verify",
	title: "Verify a goal",
	description: "Ask the broker's evidence oracle to judge a goal now, from the closed fields of verified receipts of this goal, revision and step " +
		"and from files it reads back itself, and return its verdict (signed and recorded in the receipt log) with the criteria that failed.",
	readOnly: true, idempotent: true,
	patchIn: goalSchema,
}

func goalSchema(s *jsonschema.Schema) {
	s.Properties["goal"].MinLength, s.Properties["goal"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(256)
}

func (c *conn) goalStatus(_ context.Context, _ *sdk.CallToolRequest, in goalIn) (*goalOut, string, error) {
	return c.goalReply(c.cfg.Agent.ShowGoal(c.goal(in)))
}

func (c *conn) goalVerify(_ context.Context, _ *sdk.CallToolRequest, in goalIn) (*goalOut, string, error) {
	return c.goalReply(c.cfg.Agent.VerifyGoal(c.goal(in)))
}

func (c *conn) goal(in goalIn) string {
	switch {
	case in.Goal != "":
		return in.Goal
	case c.cfg.Goal != "":
		return c.cfg.Goal
	}
	return journal.DefaultGoal
}

func (c *conn) goalReply(r *wire.GoalReply, err error) (*goalOut, string, error) {
	if err != nil {
		return nil, "", err
	}
	o := &goalOut{Goal: r.Goal, Revision: r.Revision, State: r.State.String()}
	if err := json.Unmarshal([]byte(r.View), &o.View); err != nil {
		return nil, "", wire.Errorf(wire.CodeInternal, "decode the goal view: %v", err)
	}
	v, err := goals.DecodeView(r.View)
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeInternal, "%v", err)
	}
	o.Status = v.Status
	var b strings.Builder
	v.Write(&b)
	o.Summary = b.String()
	return o, o.Summary, nil
}
