package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"warrant/internal/closed"
)

// The goal entries of the log: a verdict (goal-verdict.v1), which the
// broker's evidence oracle signs each time it judges a goal, and an
// operator statement (operator-statement.v1), which records a human's
// explicit statement about one step. Neither is a receipt: nothing ran.
// Both name the goal, its revision and the SHA-256 of that revision's goal
// document, which is their in-toto subject.
const (
	VerdictFormat   = "goal-verdict.v1"
	StatementFormat = "operator-statement.v1"
)

// VerdictNote is written into every verdict.
const VerdictNote = "VERIFIED_DONE is granted only from the closed fields of receipts that verify in this log and from files the broker read back itself; stdout, exit status alone and model claims are not evidence"

// StatementNote is written into every operator statement.
const StatementNote = "an explicit statement by the operator through the operator channel; it is not a receipt and claims nothing was run"

// Bounds of the read-backs: a receipt's artefacts (a step declares at
// most broker/internal/goals.MaxOutputs outputs), and a verdict's
// read-backs and the entries it names (at most one per criterion of a
// goal: goals.MaxSteps × goals.MaxCriteria).
const (
	MaxArtefacts   = 64
	MaxVerdictUses = 4096
)

// FileState is what a read-back found at a path: a regular file (present,
// with its size and SHA-256), nothing (missing), or something that was
// not digested (unchecked: not a regular file, a symlink on the way,
// over the size bound, unreadable); nothing is claimed about it then.
type FileState uint8

// The file states.
const (
	FilePresent FileState = iota + 1
	FileMissing
	FileUnchecked
)

var fileStateNames = []string{"", "present", "missing", "unchecked"}

func (s FileState) String() string                { return closed.String(fileStateNames, s) }
func (s FileState) MarshalText() ([]byte, error)  { return closed.Marshal(fileStateNames, s) }
func (s *FileState) UnmarshalText(b []byte) error { return closed.Unmarshal(fileStateNames, b, s) }

// ReadBack is one file the broker read back beneath a workspace, by
// descriptor and without following symlinks: a step's declared output
// after its action (a receipt's artefacts), or a file a criterion names
// at verification time (a verdict's readBacks).
type ReadBack struct {
	Path   string    `json:"path"` // relative to the workspace
	State  FileState `json:"state"`
	Size   *uint64   `json:"size,omitempty"`   // present only
	SHA256 string    `json:"sha256,omitempty"` // present only
	Why    string    `json:"why,omitempty"`    // unchecked only: what stopped the read
}

func (r *ReadBack) validate() error {
	if r.Path == "" || path.IsAbs(r.Path) || path.Clean(r.Path) != r.Path || r.Path == ".." || strings.HasPrefix(r.Path, "../") {
		return errorf("read-back path %q is not clean and workspace-relative", r.Path)
	}
	switch r.State {
	case FilePresent:
		if r.Size == nil || r.Why != "" {
			return errorf("read-back %s: present needs a size and no reason", r.Path)
		}
		return checkHex("sha256", r.SHA256)
	case FileMissing, FileUnchecked:
		if r.Size != nil || r.SHA256 != "" || (r.State == FileUnchecked) != (r.Why != "") {
			return errorf("read-back %s: %s claims a size or digest, or lacks its reason", r.Path, r.State)
		}
		return nil
	}
	return errorf("read-back %s: invalid state %d", r.Path, r.State)
}

func validateReadBacks(field string, rs []ReadBack, max int) error {
	if len(rs) > max {
		return errorf("%s: %d entries; the cap is %d", field, len(rs), max)
	}
	for i := range rs {
		if err := rs[i].validate(); err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
	}
	return nil
}

// Used names one earlier log entry a verdict used: a receipt or an
// operator statement, by log index, id and chain digest.
type Used struct {
	Index  int64  `json:"index"`
	ID     string `json:"id"`
	Digest string `json:"digest"`
}

// CriterionVerdict is the oracle's finding on one criterion of a step.
type CriterionVerdict struct {
	Kind string `json:"kind"` // receipt, file, artefact or operator
	Met  bool   `json:"met"`
	Why  string `json:"why"` // what was found, in a sentence
}

// StepVerdict is the oracle's finding on one step: done only when every
// criterion is met and every dependency is done.
type StepVerdict struct {
	ID       string             `json:"id"`
	Done     bool               `json:"verifiedDone"`
	Blocked  []string           `json:"blockedBy,omitempty"` // dependencies not done
	Criteria []CriterionVerdict `json:"criteria"`
}

// Verdict is the goal-verdict.v1 predicate: the evidence oracle's signed
// judgement of a goal under one revision, naming every receipt, operator
// statement and read-back it used. A later revision makes it stale; it
// is never changed.
type Verdict struct {
	Format     string        `json:"format"`
	Goal       string        `json:"goal"`
	Revision   uint64        `json:"goalRevision"`
	GoalDigest string        `json:"goalDigest"` // SHA-256 of the revision's goal document
	Done       bool          `json:"verifiedDone"`
	Steps      []StepVerdict `json:"steps"`
	Problem    string        `json:"logProblem,omitempty"` // why no entry of the log could be evidence
	Receipts   []Used        `json:"receipts,omitempty"`
	Statements []Used        `json:"statements,omitempty"`
	ReadBacks  []ReadBack    `json:"readBacks,omitempty"`
	At         Time          `json:"at"`
	Note       string        `json:"note"`
	LogIndex   int64         `json:"logIndex"`
	Previous   string        `json:"previousReceiptDigest,omitempty"`
}

func (v *Verdict) validate() error {
	if v.Format != VerdictFormat || v.Note != VerdictNote || v.Goal == "" || v.Revision == 0 {
		return errorf("verdict: format, note, goal and revision are required")
	}
	done := len(v.Steps) > 0 && v.Problem == ""
	for _, s := range v.Steps {
		met := len(s.Criteria) > 0 && len(s.Blocked) == 0
		for _, c := range s.Criteria {
			met = met && c.Met
		}
		if s.Done != met {
			return errorf("verdict: step %s says done %t against its criteria", s.ID, s.Done)
		}
		done = done && s.Done
	}
	if v.Done != done {
		return errorf("verdict: done %t against its steps", v.Done)
	}
	err := firstErr(checkHex("goalDigest", v.GoalDigest), checkUsed("receipts", v.Receipts),
		checkUsed("statements", v.Statements), validateReadBacks("readBacks", v.ReadBacks, MaxVerdictUses))
	if err == nil && v.Previous != "" {
		err = checkHex("previousReceiptDigest", v.Previous)
	}
	return err
}

func checkUsed(field string, us []Used) error {
	if len(us) > MaxVerdictUses {
		return errorf("%s: %d entries; the cap is %d", field, len(us), MaxVerdictUses)
	}
	for i, u := range us {
		if u.ID == "" || u.Index < 0 {
			return errorf("%s[%d]: index and id are required", field, i)
		}
		if err := checkHex(field+".digest", u.Digest); err != nil {
			return err
		}
	}
	return nil
}

// OperatorStatement is the operator-statement.v1 predicate: the operator
// said Statement about Step of Goal under Revision, through the operator
// channel.
type OperatorStatement struct {
	Format     string `json:"format"`
	Goal       string `json:"goal"`
	Revision   uint64 `json:"goalRevision"`
	GoalDigest string `json:"goalDigest"`
	Step       string `json:"step"`
	Statement  string `json:"statement"`
	ID         string `json:"statementId"`
	At         Time   `json:"at"`
	Note       string `json:"note"`
	LogIndex   int64  `json:"logIndex"`
	Previous   string `json:"previousReceiptDigest,omitempty"`
}

func (s *OperatorStatement) validate() error {
	if s.Format != StatementFormat || s.Note != StatementNote || s.Goal == "" || s.Revision == 0 ||
		s.Step == "" || s.Statement == "" || s.ID == "" {
		return errorf("operator statement: format, note, id, goal, revision, step and statement are required")
	}
	err := checkHex("goalDigest", s.GoalDigest)
	if err == nil && s.Previous != "" {
		err = checkHex("previousReceiptDigest", s.Previous)
	}
	return err
}

func goalSubjects(goal string, revision uint64, digest string) []Subject {
	return []Subject{{Name: "goal:" + goal + "@" + strconv.FormatUint(revision, 10), Digest: map[string]string{"sha256": digest}}}
}

// decodeCanonical strictly decodes b into v (with validate) and requires
// that it re-encodes to the same bytes.
func decodeCanonical[T any, P interface {
	*T
	validate() error
}](what string, b []byte) (*T, error) {
	var v T
	if err := strictJSON(b, &v); err != nil {
		return nil, fmt.Errorf("decode %s: %w", what, err)
	}
	if err := P(&v).validate(); err != nil {
		return nil, fmt.Errorf("decode %s: %w", what, err)
	}
	if again, _ := json.Marshal(&v); !bytes.Equal(again, b) {
		return nil, fmt.Errorf("decode %s: %w: not in canonical form", what, ErrInvalid)
	}
	return &v, nil
}

// AppendVerdict signs v into the log, filling in its format, note and
// chain links.
func (c *Chain) AppendVerdict(v Verdict) (Entry, *Verdict, error) {
	v.Format, v.Note, v.LogIndex, v.Previous = VerdictFormat, VerdictNote, c.n, c.prev
	if err := v.validate(); err != nil {
		return Entry{}, nil, fmt.Errorf("record verdict: %w", err)
	}
	e, err := c.appendPredicate(VerdictPredicate, goalSubjects(v.Goal, v.Revision, v.GoalDigest), &v)
	return e, &v, err
}

// AppendStatement signs s into the log, filling in its format, note and
// chain links.
func (c *Chain) AppendStatement(s OperatorStatement) (Entry, error) {
	s.Format, s.Note, s.LogIndex, s.Previous = StatementFormat, StatementNote, c.n, c.prev
	if err := s.validate(); err != nil {
		return Entry{}, fmt.Errorf("record operator statement: %w", err)
	}
	return c.appendPredicate(StatementPredicate, goalSubjects(s.Goal, s.Revision, s.GoalDigest), &s)
}

func (c *Chain) appendPredicate(predicateType string, subjects []Subject, v any) (Entry, error) {
	pred, err := json.Marshal(v)
	if err != nil {
		panic("receipt: internal error: encode " + predicateType + ": " + err.Error())
	}
	return c.append(statement(predicateType, subjects, pred), nil)
}

// OpenVerdict checks one stored envelope under pub and returns the
// verdict it holds: the broker reads back its own latest verdict with it
// (the step gate), trusting nothing it did not sign.
func OpenVerdict(env []byte, pub ed25519.PublicKey) (*Verdict, string, error) {
	c := checkEntry(env, pub)
	if c.err != nil {
		return nil, "", c.err
	}
	if c.verdict == nil {
		return nil, "", fmt.Errorf("%w: the entry is not a verdict", ErrInvalid)
	}
	return c.verdict, c.payload, nil
}

// Evidence is one entry of a verified log that the goals oracle may use:
// a receipt or an operator statement, with its log index and chain digest.
type Evidence struct {
	Index     int64
	Digest    string
	Receipt   *Receipt
	Statement *OperatorStatement
}

// Evidence verifies the whole log as Verify does, held to x, and
// returns, with the report, the receipts and operator statements that
// may serve as evidence: those whose own entry has no problem and that
// the latest verified checkpoint covers. When the log as a whole has a
// problem (a checkpoint that fails or covers more than the log holds, an
// unanchored tail, receipts the journal names that the log lacks)
// nothing is returned: fail closed.
func (v *Verifier) Evidence(entries []Entry, checkpoints [][]byte, x Expect) (*Report, []Evidence) {
	rep := v.Verify(entries, checkpoints, x)
	bad := map[int64]bool{}
	for _, p := range rep.Problems {
		if p.Index < 0 {
			return rep, nil
		}
		bad[p.Index] = true
	}
	if rep.Checkpoint == nil {
		return rep, nil
	}
	var out []Evidence
	for i := int64(0); i < rep.Checkpoint.N; i++ {
		c := v.memo[string(entries[i].Envelope)]
		if bad[i] || c == nil || (c.receipt == nil && c.statement == nil) {
			continue
		}
		out = append(out, Evidence{Index: i, Digest: c.payload, Receipt: c.receipt, Statement: c.statement})
	}
	return rep, out
}

// checkVerdicts requires each verdict to name earlier receipts and
// operator statements by their index, id and chain digest.
func checkVerdicts(rep *Report, done []*checked) {
	for i, c := range done {
		if c.verdict == nil {
			continue
		}
		for _, u := range c.verdict.Receipts {
			if u.Index >= int64(i) || u.Index < 0 || done[u.Index].receipt == nil ||
				done[u.Index].payload != u.Digest || done[u.Index].receipt.ID != u.ID {
				rep.add(int64(i), ProblemVerdict, "verdict names receipt #%d (%s), which is not that earlier receipt", u.Index, u.ID)
			}
		}
		for _, u := range c.verdict.Statements {
			if u.Index >= int64(i) || u.Index < 0 || done[u.Index].statement == nil ||
				done[u.Index].payload != u.Digest || done[u.Index].statement.ID != u.ID {
				rep.add(int64(i), ProblemVerdict, "verdict names operator statement #%d (%s), which is not that earlier statement", u.Index, u.ID)
			}
		}
	}
}
