package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker/view"
	"warrant/wire"
)

// tool is one tool's definition. Its schemas are inferred from In and Out
// (every struct closed: additionalProperties false) and then tightened by
// the patches; the handler's arguments are checked against the input
// schema here rather than by the SDK, so that a bad argument is a tool
// error with the stable code.
type tool[In, Out any] struct {
	name, title, description string
	// What the tool does, for the annotations (openWorldHint is always
	// false: every tool stays on this host).
	readOnly, destructive, idempotent bool
	patchIn, patchOut                 func(*jsonschema.Schema)
}

// handler answers one call: the structured result (nil only with an
// error), its text for a model or a person, and a refusal. A *wire.Error
// keeps its code; any other error is an I/O failure of this client.
type handler[In, Out any] func(ctx context.Context, req *sdk.CallToolRequest, in In) (*Out, string, error)

// maxMessage bounds the sentence of an argument refusal, which quotes the
// schema validator.
const maxMessage = 1024

// addTool registers t with h on s.
func addTool[In, Out any](s *sdk.Server, c *conn, t tool[In, Out], h handler[In, Out]) {
	in, out := schemaFor[In](t.patchIn), schemaFor[Out](t.patchOut)
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: internal error: the %s tool's input schema: %v", t.name, err))
	}
	no := false
	s.AddTool(&sdk.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: in, OutputSchema: out,
		Annotations: &sdk.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, DestructiveHint: &t.destructive,
			IdempotentHint: t.idempotent, OpenWorldHint: &no}},
		func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
			defer func() {
				if p := recover(); p != nil {
					c.logf("the %s tool panicked: %v\n%s", t.name, p, debug.Stack())
					res, err = toolResult[Out](nil, "", wire.Errorf(wire.CodeInternal, "the %s tool failed inside the MCP server, which keeps serving", t.name)), nil
				}
			}()
			args, werr := decode[In](req.Params.Arguments, resolved)
			if werr != nil {
				return toolResult[Out](nil, "", werr), nil
			}
			o, text, herr := h(ctx, req, args)
			return toolResult(o, text, herr), nil
		})
}

// schemaFor infers T's schema and applies patch.
func schemaFor[T any](patch func(*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: internal error: schema of %T: %v", *new(T), err))
	}
	if patch != nil {
		patch(s)
	}
	return s
}

// decode checks raw against the input schema, then decodes it strictly.
func decode[In any](raw json.RawMessage, schema *jsonschema.Resolved) (In, *wire.Error) {
	var in In
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return in, refuseArgs("the arguments are not JSON: %v", err)
	}
	if err := schema.Validate(v); err != nil {
		return in, refuseArgs("the arguments do not match the tool's input schema: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, refuseArgs("the arguments do not match the tool's input schema: %v", err)
	}
	return in, nil
}

// refuseArgs is ARGUMENTS_INVALID with a sentence cut to maxMessage.
func refuseArgs(format string, a ...any) *wire.Error {
	msg := fmt.Sprintf(format, a...)
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return wire.Errorf(wire.CodeArgumentsInvalid, "%s", msg)
}

// toolResult makes the call's result. A refusal is isError, its text the
// stable code and the sentence first.
func toolResult[Out any](o *Out, text string, err error) *sdk.CallToolResult {
	res := &sdk.CallToolResult{}
	if o != nil {
		res.StructuredContent = o
	}
	if err != nil {
		we := (&view.Ending{Err: err}).WireErr()
		msg := we.Code.String() + ": " + we.Message
		if text != "" {
			msg += "\n\n" + text
		}
		text = msg
		res.IsError = true
	}
	res.Content = []sdk.Content{&sdk.TextContent{Text: text}}
	return res
}
