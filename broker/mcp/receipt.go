package mcp

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"warrant/broker"
	"warrant/broker/view/receiptview"
	"warrant/wire"
)

type receiptIn struct {
	ID string `json:"id" jsonschema:"a receipt id, or the handle of the action it is for"`
}

type receiptOut struct {
	ReceiptID   string         `json:"receipt_id"`
	Action      string         `json:"action"`
	Index       int64          `json:"index" jsonschema:"its position in the receipt log"`
	Verified    bool           `json:"verified" jsonschema:"signature, chain link, body and checkpoints verify under this state directory's key"`
	Problems    []problemOut   `json:"problems" jsonschema:"what failed verification; empty when verified"`
	BodyDeleted bool           `json:"body_deleted" jsonschema:"its retained output was deleted by retention, with a deletion record"`
	Outcome     string         `json:"outcome"`
	Summary     string         `json:"summary" jsonschema:"the receipt for a person, as broker receipts show prints it"`
	Receipt     map[string]any `json:"receipt" jsonschema:"the signed receipt itself"`
}

type problemOut struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

var receiptTool = tool[receiptIn, receiptOut]{
	name:  "receipt",
	title: "Read a receipt",
	description: "One signed receipt from the broker's log, by receipt id or action handle: what ran (resolved executable and digest, argv, cwd, environment names), " +
		"under which policy and sandbox, how it ended, what output was observed, retained or redacted, and whether the receipt verifies.",
	readOnly: true, idempotent: true,
	patchIn: func(s *jsonschema.Schema) {
		s.Properties["id"].MinLength, s.Properties["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(256)
	},
	patchOut: func(s *jsonschema.Schema) {
		s.Properties["problems"].Types, s.Properties["problems"].Type = nil, "array"
	},
}

// receipt reads the log read-only, without the state lock, as `broker
// receipts show` does.
func (c *conn) receipt(ctx context.Context, _ *sdk.CallToolRequest, in receiptIn) (*receiptOut, string, error) {
	l, err := broker.ReadReceiptLog(ctx, c.cfg.StateDir)
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeIOFailed, "read the receipt log: %v", err)
	}
	s := receiptview.FindReceipt(l.Entries, l.Verify, in.ID)
	if s == nil {
		return nil, "", wire.Errorf(wire.CodeArgumentsInvalid, "no receipt has id or action %q", in.ID)
	}
	raw, err := json.Marshal(s.Receipt)
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeInternal, "encode receipt %s: %v", s.Receipt.ID, err)
	}
	o := &receiptOut{ReceiptID: s.Receipt.ID, Action: s.Receipt.Action, Index: s.Index, Verified: s.Verified,
		Problems: []problemOut{}, BodyDeleted: s.Pruned != nil, Outcome: s.Receipt.Outcome.String()}
	if err := json.Unmarshal(raw, &o.Receipt); err != nil {
		return nil, "", wire.Errorf(wire.CodeInternal, "decode receipt %s: %v", s.Receipt.ID, err)
	}
	for _, p := range s.Problems {
		o.Problems = append(o.Problems, problemOut{Kind: p.Kind.String(), Detail: p.Detail})
	}
	var b strings.Builder
	s.Write(&b)
	o.Summary = b.String()
	return o, o.Summary, nil
}
