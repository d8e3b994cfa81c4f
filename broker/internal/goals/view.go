package goals

import (
	"encoding/json"

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
