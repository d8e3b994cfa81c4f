package goals

import (
	"encoding/json"
	"fmt"
	"io"

	"warrant/receipt"
)

// The status of a goal under its current revision, a closed set.
const (
	StatusDone       = "VERIFIED_DONE" // the latest verdict under this revision says done
	StatusNotDone    = "NOT_DONE"      // the latest verdict under this revision says not done
	StatusUnverified = "UNVERIFIED"    // no verdict under this revision yet (a revision makes earlier ones stale)
	StatusNoCriteria = "NO_CRITERIA"   // the revision has no goal document: nothing can verify it done
)

// View is a goal as goal_show and goal_verify report it (docs/goals.md):
// its record, its current revision's document, and the latest verdict
// under that revision with its log index. Status is derived from the
// verdict alone.
type View struct {
	Goal         string           `json:"goal"`
	Title        string           `json:"title"`
	Revision     uint64           `json:"revision"`
	State        string           `json:"state"`
	Status       string           `json:"status"`
	Document     *Spec            `json:"document"`
	GoalDigest   string           `json:"goal_digest,omitempty"`
	Verdict      *receipt.Verdict `json:"verdict"`
	VerdictIndex *int64           `json:"verdict_log_index,omitempty"`
}

// StatusOf derives a goal's status from its document and latest verdict.
func StatusOf(doc *Spec, v *receipt.Verdict) string {
	switch {
	case doc == nil:
		return StatusNoCriteria
	case v == nil:
		return StatusUnverified
	case v.Done:
		return StatusDone
	}
	return StatusNotDone
}

// JSON is the view's JSON text, as the wire carries it.
func (v *View) JSON() string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("goals: internal error: encode goal view: " + err.Error())
	}
	return string(b)
}

// DecodeView decodes a view the broker sent (JSON text).
func DecodeView(text string) (*View, error) {
	var v View
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("decode the broker's goal view: %w", err)
	}
	return &v, nil
}

// Write prints the view for a person: what the latest verdict under the
// current revision found for each step and criterion, and what it used.
func (v *View) Write(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("goal %s  %q  revision %d  %s  %s", v.Goal, v.Title, v.Revision, v.State, v.Status)
	if v.Document != nil {
		p("  workspace %s  document sha256 %s", v.Document.Workspace, v.GoalDigest)
	}
	d := v.Verdict
	if d == nil {
		if v.Document != nil {
			p("  no verdict under revision %d yet: run `broker goals verify %s`", v.Revision, v.Goal)
		}
		return
	}
	p("  verdict #%d:", *v.VerdictIndex)
	if d.Problem != "" {
		p("  %s", d.Problem)
	}
	for _, s := range d.Steps {
		state := "VERIFIED_DONE"
		if !s.Done {
			state = "not done"
		}
		p("  step %s: %s", s.ID, state)
		if len(s.Blocked) > 0 {
			p("    blocked by %v", s.Blocked)
		}
		for _, c := range s.Criteria {
			mark := "met    "
			if !c.Met {
				mark = "NOT MET"
			}
			p("    %s %-8s %s", mark, c.Kind, c.Why)
		}
	}
	for _, u := range d.Receipts {
		p("  used receipt #%d %s sha256 %s", u.Index, u.ID, u.Digest)
	}
	for _, u := range d.Statements {
		p("  used operator statement #%d %s sha256 %s", u.Index, u.ID, u.Digest)
	}
	for _, r := range d.ReadBacks {
		p("  read back %s: %s %s%s", r.Path, r.State, r.SHA256, r.Why)
	}
}
