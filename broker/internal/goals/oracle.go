package goals

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"warrant/receipt"
	"warrant/wire"
)

// Reader reads a file back beneath the goal's workspace, by descriptor
// and without following symlinks. With content it also returns the
// bytes (bounded by MaxFileBytes; past it the file is unchecked).
type Reader func(rel string, content bool) (receipt.ReadBack, []byte)

// Input is everything the oracle judges from: the goal under its current
// revision, the evidence of a verified log (receipt.Verifier.Evidence),
// how many entries failed verification, and the read-back of files.
type Input struct {
	Goal     string
	Revision uint64
	Spec     *Spec
	Digest   string // of the revision's canonical document
	Evidence []receipt.Evidence
	Rejected int    // log entries with a problem: never evidence
	Problem  string // a problem of the whole log: nothing is evidence
	Read     Reader
	At       receipt.Time
}

// Evaluate is the evidence oracle. A step is VERIFIED_DONE only when
// every criterion is met and every dependency is done; the goal only
// when every step is. Evidence is only what Input holds: receipts and
// operator statements whose entries verified, of this goal, this
// revision and this step, taken in the workspace of the goal, and files
// read back now. Stdout text is never looked at.
func Evaluate(in Input) receipt.Verdict {
	e := &evaluation{in: in, readBacks: map[string]int{}, used: map[int64]bool{}}
	v := receipt.Verdict{Goal: in.Goal, Revision: in.Revision, GoalDigest: in.Digest, Problem: in.Problem, At: in.At}
	byStep := map[string][]receipt.Evidence{}
	for _, ev := range in.Evidence {
		if step, ok := e.belongs(ev); ok {
			byStep[step] = append(byStep[step], ev)
		}
	}
	done := map[string]bool{}
	steps := make([]receipt.StepVerdict, len(in.Spec.Steps))
	for _, i := range order(in.Spec.Steps) {
		st := &in.Spec.Steps[i]
		sv := receipt.StepVerdict{ID: st.ID}
		for _, d := range st.DependsOn {
			if !done[d] {
				sv.Blocked = append(sv.Blocked, d)
			}
		}
		all := len(sv.Blocked) == 0
		for ci := range st.Criteria {
			cv := e.criterion(&st.Criteria[ci], st, byStep[st.ID])
			all = all && cv.Met
			sv.Criteria = append(sv.Criteria, cv)
		}
		sv.Done = all
		done[st.ID] = all
		steps[i] = sv
	}
	v.Steps = steps
	v.Done = in.Problem == "" && len(steps) > 0
	for _, s := range steps {
		v.Done = v.Done && s.Done
	}
	v.Receipts, v.Statements, v.ReadBacks = e.receipts, e.statements, e.rb
	return v
}

type evaluation struct {
	in                   Input
	receipts, statements []receipt.Used
	used                 map[int64]bool
	rb                   []receipt.ReadBack
	readBacks            map[string]int // path → index in rb
	contents             map[string][]byte
}

// belongs reports whether ev is of this goal and revision, and its step.
// A receipt must also have been taken in the goal's workspace.
func (e *evaluation) belongs(ev receipt.Evidence) (string, bool) {
	if s := ev.Statement; s != nil {
		return s.Step, s.Goal == e.in.Goal && s.Revision == e.in.Revision && s.GoalDigest == e.in.Digest
	}
	r := ev.Receipt
	return r.Step, r.Goal == e.in.Goal && r.GoalRevision != nil && *r.GoalRevision == e.in.Revision &&
		r.Step != "" && r.Identity.Workspace.Path == e.in.Spec.Workspace
}

func (e *evaluation) use(ev receipt.Evidence) {
	if e.used[ev.Index] {
		return
	}
	e.used[ev.Index] = true
	if ev.Receipt != nil {
		e.receipts = append(e.receipts, receipt.Used{Index: ev.Index, ID: ev.Receipt.ID, Digest: ev.Digest})
	} else {
		e.statements = append(e.statements, receipt.Used{Index: ev.Index, ID: ev.Statement.ID, Digest: ev.Digest})
	}
}

func (e *evaluation) criterion(c *Criterion, st *Step, evidence []receipt.Evidence) receipt.CriterionVerdict {
	cv := receipt.CriterionVerdict{Kind: c.Kind}
	cv.Met, cv.Why = e.judge(c, st, evidence)
	cv.Why = clip(cv.Why)
	return cv
}

// maxWhy bounds a finding's sentence (it may quote a command or a path).
const maxWhy = 256

// clip cuts s to at most maxWhy bytes, on a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= maxWhy {
		return s
	}
	cut := maxWhy - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (e *evaluation) judge(c *Criterion, st *Step, evidence []receipt.Evidence) (bool, string) {
	switch c.Kind {
	case KindReceipt:
		return e.receiptCriterion(c, st, evidence)
	case KindArtefact:
		return e.artefactCriterion(c, st, evidence)
	case KindFile:
		return e.fileCriterion(c)
	case KindOperator:
		for i := len(evidence) - 1; i >= 0; i-- {
			if s := evidence[i].Statement; s != nil {
				e.use(evidence[i])
				return true, fmt.Sprintf("the operator stated %q (statement %s)", s.Statement, s.ID)
			}
		}
		return false, fmt.Sprintf("no operator statement about step %s under revision %d (asked: %s)", st.ID, e.in.Revision, c.Prompt)
	}
	panic("goals: internal error: criterion kind " + c.Kind)
}

// latest returns the last receipt among evidence that match accepts.
func latest(evidence []receipt.Evidence, match func(*receipt.Receipt) bool) (receipt.Evidence, bool) {
	for i := len(evidence) - 1; i >= 0; i-- {
		if r := evidence[i].Receipt; r != nil && match(r) {
			return evidence[i], true
		}
	}
	return receipt.Evidence{}, false
}

func (e *evaluation) receiptCriterion(c *Criterion, st *Step, evidence []receipt.Evidence) (bool, string) {
	what := "fingerprint " + c.Fingerprint
	if c.Command != nil {
		what = "`" + strings.Join(append([]string{c.Command.Executable}, c.Command.Argv...), " ") + "`"
	}
	ev, ok := latest(evidence, func(r *receipt.Receipt) bool { return c.matches(r) })
	if !ok {
		return false, e.none("receipt of "+what, st)
	}
	e.use(ev)
	want := int32(0)
	if c.ExitCode != nil {
		want = *c.ExitCode
	}
	return ended(ev.Receipt, want)
}

// matches reports whether r's command identity is the criterion's.
func (c *Criterion) matches(r *receipt.Receipt) bool {
	if c.Fingerprint != "" {
		return r.Fingerprint == c.Fingerprint
	}
	cwd := c.Command.Cwd
	if cwd == "" {
		cwd = "."
	}
	id := &r.Identity
	return (id.Requested == c.Command.Executable || id.Executable.Path == c.Command.Executable) &&
		slices.Equal(id.Argv, c.Command.Argv) && id.Cwd.Path == cwd
}

// ended checks the closed fields of a receipt used as evidence: outcome
// exited with code want, the group confirmed gone, no protected path
// changed.
func ended(r *receipt.Receipt, want int32) (bool, string) {
	switch {
	case r.Outcome != wire.Exited:
		return false, fmt.Sprintf("receipt %s: outcome %s, not exited", r.ID, r.Outcome)
	case *r.ExitCode != want:
		return false, fmt.Sprintf("receipt %s: exit code %d, want %d", r.ID, *r.ExitCode, want)
	case r.GroupGone == nil:
		return false, fmt.Sprintf("receipt %s: the group was not confirmed gone", r.ID)
	case r.Protected != nil && len(r.Protected.Changes) > 0:
		return false, fmt.Sprintf("receipt %s: %d protected path(s) changed (%s …)", r.ID, len(r.Protected.Changes), r.Protected.Changes[0].Path)
	}
	return true, fmt.Sprintf("receipt %s: exited %d, group gone, no protected changes", r.ID, want)
}

func (e *evaluation) none(what string, st *Step) string {
	s := fmt.Sprintf("no verified %s for step %s under revision %d", what, st.ID, e.in.Revision)
	if e.in.Problem != "" {
		s += " (" + e.in.Problem + ")"
	} else if e.in.Rejected > 0 {
		s += fmt.Sprintf(" (%d log entr%s failed verification and were not considered)", e.in.Rejected, map[bool]string{true: "y", false: "ies"}[e.in.Rejected == 1])
	}
	return s
}

func (e *evaluation) artefactCriterion(c *Criterion, st *Step, evidence []receipt.Evidence) (bool, string) {
	ev, ok := latest(evidence, func(r *receipt.Receipt) bool { return r.Artefacts != nil })
	if !ok {
		return false, e.none("receipt listing the step's artefacts", st)
	}
	e.use(ev)
	r := ev.Receipt
	if ok, why := ended(r, 0); !ok {
		return false, why
	}
	i := slices.IndexFunc(r.Artefacts, func(a receipt.ReadBack) bool { return a.Path == c.Path })
	if i < 0 {
		return false, fmt.Sprintf("receipt %s does not list %s among its artefacts", r.ID, c.Path)
	}
	a := r.Artefacts[i]
	if a.State != receipt.FilePresent {
		return false, fmt.Sprintf("receipt %s: artefact %s was %s after the action", r.ID, c.Path, a.State)
	}
	if c.SHA256 != "" && a.SHA256 != c.SHA256 {
		return false, fmt.Sprintf("receipt %s: artefact %s has SHA-256 %.16s…, want %.16s…", r.ID, c.Path, a.SHA256, c.SHA256)
	}
	now, _ := e.read(c.Path, false)
	switch {
	case now.State != receipt.FilePresent:
		return false, fmt.Sprintf("artefact %s is %s now (receipt %s saw it present)", c.Path, now.State, r.ID)
	case now.SHA256 != a.SHA256:
		return false, fmt.Sprintf("artefact %s changed since receipt %s: SHA-256 %.16s… now, %.16s… then", c.Path, r.ID, now.SHA256, a.SHA256)
	}
	return true, fmt.Sprintf("receipt %s lists %s (%d bytes, SHA-256 %.16s…) and it reads back the same now", r.ID, c.Path, *a.Size, a.SHA256)
}

func (e *evaluation) fileCriterion(c *Criterion) (bool, string) {
	content := c.Contains != nil || c.JSONPointer != nil
	rb, data := e.read(c.Path, content)
	switch {
	case rb.State == receipt.FileMissing:
		return false, fmt.Sprintf("%s does not exist", c.Path)
	case rb.State == receipt.FileUnchecked:
		return false, fmt.Sprintf("%s could not be read back: %s", c.Path, rb.Why)
	case c.SHA256 != "" && rb.SHA256 != c.SHA256:
		return false, fmt.Sprintf("%s has SHA-256 %.16s…, want %.16s…", c.Path, rb.SHA256, c.SHA256)
	case c.Contains != nil && !bytes.Contains(data, []byte(*c.Contains)):
		return false, fmt.Sprintf("%s does not contain %q", c.Path, *c.Contains)
	}
	if c.JSONPointer != nil {
		var doc, want any
		if err := decodeJSON(data, &doc); err != nil {
			return false, fmt.Sprintf("%s is not JSON: %v", c.Path, err)
		}
		tokens, _ := parsePointer(*c.JSONPointer) // checked by Validate
		got, err := resolve(doc, tokens)
		if err != nil {
			return false, fmt.Sprintf("%s: json_pointer %q: %v", c.Path, *c.JSONPointer, err)
		}
		if decodeJSON(c.Equals, &want) != nil || !equalJSON(got, want) {
			return false, fmt.Sprintf("%s: %q is not %s", c.Path, *c.JSONPointer, c.Equals)
		}
	}
	return true, fmt.Sprintf("%s read back: %d bytes, SHA-256 %.16s…, every check holds", c.Path, *rb.Size, rb.SHA256)
}

// read reads rel back once per evaluation (with its content when any
// criterion needs it) and records it among the verdict's read-backs.
func (e *evaluation) read(rel string, content bool) (receipt.ReadBack, []byte) {
	if i, ok := e.readBacks[rel]; ok {
		if data, ok := e.contents[rel]; ok || !content {
			return e.rb[i], data
		}
	}
	rb, data := e.in.Read(rel, content)
	if i, ok := e.readBacks[rel]; ok {
		e.rb[i] = rb
	} else {
		e.readBacks[rel] = len(e.rb)
		e.rb = append(e.rb, rb)
	}
	if content {
		if e.contents == nil {
			e.contents = map[string][]byte{}
		}
		e.contents[rel] = data
	}
	return rb, data
}
