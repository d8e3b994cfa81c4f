package mcp

import (
	"slices"
	"strings"
	"testing"
)

// TestRunProposesEgress: run's egress is a proposal: the approval it
// returns shows the exact list the human approves (canonical, sorted)
// and says that they may grant another; without it, the list is empty;
// an entry the wire refuses is a tool error and asks nothing.
func TestRunProposesEgress(t *testing.T) {
	r := newRig(t)
	s := r.connect(Config{}, nil, "")
	in := s.tools["run"].InputSchema.(map[string]any)
	if eg, _ := in["properties"].(map[string]any)["egress"].(map[string]any); eg["type"] != "array" || eg["maxItems"] != 32.0 {
		t.Errorf("run's egress: %v, want an optional array of at most 32", eg)
	}
	var out actionOut
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"ci"}, "egress": []string{"Registry.NPMjs.org:443", "127.0.0.1:4873"}}, &out)
	if out.Approval == nil || !slices.Equal(out.Approval.Egress, []string{"127.0.0.1:4873", "registry.npmjs.org:443"}) {
		t.Fatalf("the approval shows egress %+v", out.Approval)
	}
	if m := out.Approval.Message; !strings.Contains(m, "127.0.0.1:4873, registry.npmjs.org:443") || !strings.Contains(m, "--egress none") {
		t.Errorf("the message does not name the list or the human's choice: %s", m)
	}
	s.call("run", map[string]any{"executable": r.tool, "argv": []string{"ci"}}, &out)
	if out.Approval == nil || out.Approval.Egress == nil || len(out.Approval.Egress) != 0 {
		t.Fatalf("without egress the approval shows %+v", out.Approval)
	}
	res := s.call("run", map[string]any{"executable": r.tool, "egress": []string{"*.example.com:443"}}, nil)
	if !res.IsError || !strings.Contains(text(res), "no wildcards") {
		t.Fatalf("a wildcard: %+v %s", res, text(res))
	}
}
