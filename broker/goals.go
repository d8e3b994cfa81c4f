package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"warrant/broker/internal/goals"
	"warrant/broker/internal/journal"
	"warrant/receipt"
	"warrant/wire"
)

// Goals with steps and criteria (broker/internal/goals): the agent
// creates, revises, shows, verifies and lists them; the operator pauses,
// resumes or cancels them and states what an operator criterion asks
// for. The oracle's verdicts and the operator's statements are signed
// entries of the receipt log, appended by appendLog like receipts.

// document decodes an agent's goal document into its canonical form.
func document(spec, title string) (*journal.Document, error) {
	if spec == "" {
		return nil, nil
	}
	s, err := goals.Decode(spec, title)
	if err != nil {
		return nil, err
	}
	doc := s.Encode()
	if len(doc) > wire.MaxGoalJSON {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "the goal document is %d bytes in canonical form; the cap is %d", len(doc), wire.MaxGoalJSON)
	}
	return &journal.Document{JSON: doc, Digest: goals.Digest(doc)}, nil
}

func (b *Broker) createGoal(ctx context.Context, m *wire.GoalCreate) (wire.Message, error) {
	doc, err := document(m.Spec, m.Title)
	if err != nil {
		return nil, err
	}
	title := m.Title
	if doc != nil {
		title = mustSpec(doc).Title // the document's, or m.Title when it has none
	}
	g, err := b.j.CreateGoal(ctx, title, doc)
	return b.goalView(ctx, g, err)
}

func (b *Broker) reviseGoal(ctx context.Context, m *wire.GoalRevise) (wire.Message, error) {
	doc, err := document(m.Spec, "")
	if err != nil {
		return nil, err
	}
	g, err := b.j.ReviseGoal(ctx, m.Goal, doc)
	return b.goalView(ctx, g, err)
}

// mustSpec decodes a document the journal stored (and this broker
// validated before storing it).
func mustSpec(doc *journal.Document) *goals.Spec {
	s, err := goals.Decode(string(doc.JSON), "")
	if err != nil {
		panic("broker: internal error: a stored goal document does not decode: " + err.Error())
	}
	return s
}

// current returns the goal's current revision's document, or nil.
func (b *Broker) current(ctx context.Context, g journal.Goal) (*journal.Document, *goals.Spec, error) {
	doc, err := b.j.GoalDocument(ctx, g.ID, g.Revision)
	if err != nil || doc == nil {
		return nil, nil, err
	}
	return doc, mustSpec(doc), nil
}

// latestVerdict returns the latest verdict under the goal's current
// revision, read from the log and checked under the broker's key: the
// journal's index row alone is trusted for nothing.
func (b *Broker) latestVerdict(ctx context.Context, g journal.Goal) (*receipt.Verdict, int64, error) {
	idx, env, ok, err := b.j.LatestVerdict(ctx, g.ID, g.Revision)
	if err != nil || !ok {
		return nil, 0, err
	}
	v, _, err := receipt.OpenVerdict(env, b.Keys().Public())
	if err != nil {
		return nil, 0, fmt.Errorf("verdict #%d of goal %s does not verify (run `broker receipts verify`): %w", idx, g.ID, err)
	}
	if v.Goal != g.ID || v.Revision != g.Revision || v.LogIndex != idx {
		return nil, 0, fmt.Errorf("verdict #%d names goal %s revision %d at #%d, not %s revision %d", idx, v.Goal, v.Revision, v.LogIndex, g.ID, g.Revision)
	}
	return v, idx, nil
}

// view is the goal's view with its latest verdict under its current
// revision (or v at idx, the verdict just made).
func (b *Broker) view(ctx context.Context, g journal.Goal, v *receipt.Verdict, idx int64) (*wire.GoalReply, error) {
	doc, spec, err := b.current(ctx, g)
	if err != nil {
		return nil, err
	}
	if v == nil {
		if v, idx, err = b.latestVerdict(ctx, g); err != nil {
			return nil, err
		}
	}
	out := &goals.View{Goal: g.ID, Title: g.Title, Revision: g.Revision, State: g.State.String(),
		Status: goals.StatusOf(spec, v), Document: spec, Verdict: v}
	if doc != nil {
		out.GoalDigest = doc.Digest
	}
	if v != nil {
		out.VerdictIndex = &idx
	}
	r := g.Reply()
	r.View = out.JSON()
	return r, nil
}

func (b *Broker) goalView(ctx context.Context, g journal.Goal, err error) (wire.Message, error) {
	if err != nil {
		return nil, err
	}
	return b.view(ctx, g, nil, 0)
}

func (b *Broker) showGoal(ctx context.Context, id string) (wire.Message, error) {
	g, err := b.j.Goal(ctx, id)
	return b.goalView(ctx, g, err)
}

func (b *Broker) listGoals(ctx context.Context) (wire.Message, error) {
	gs, err := b.j.Goals(ctx, maxList)
	if err != nil {
		return nil, err
	}
	l := &wire.GoalListing{}
	for _, g := range gs {
		l.Goals = append(l.Goals, *g.Reply())
	}
	return l, nil
}

// VerifyGoal runs the evidence oracle on the goal under its current
// revision and appends its verdict, signed, to the receipt log, in one
// transaction with the log's checkpoint: the log is read, verified, and
// judged inside the append, so the verdict's chain link and the evidence
// it names come from the same log. A goal without a document has nothing
// that could verify it (ARGUMENTS_INVALID; nothing is appended).
func (b *Broker) VerifyGoal(ctx context.Context, id string) (wire.Message, error) {
	g, err := b.j.Goal(ctx, id)
	if err != nil {
		return nil, err
	}
	doc, spec, err := b.current(ctx, g)
	if err != nil {
		return nil, err
	}
	if spec == nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid,
			"goal %s has no steps or criteria under revision %d, so nothing can verify it done; revise it with a goal document", g.ID, g.Revision)
	}
	read, closeWS := goals.WorkspaceReader(spec.Workspace)
	defer closeWS()
	var verdict *receipt.Verdict
	var idx int64
	err = b.appendLog(ctx, func(tx *journal.LogTx, c *receipt.Chain) (bool, error) {
		snap, err := tx.Log()
		if err != nil {
			return false, err
		}
		in := goals.Input{Goal: g.ID, Revision: g.Revision, Spec: spec, Digest: doc.Digest, Read: read, At: b.Stamp(b.cfg.Now())}
		rep, evidence := b.rlog.verifier.Evidence(snap.Entries, snap.Checkpoints, receipt.Expect{Checkpointed: true, Receipts: snap.Named})
		in.Evidence = evidence
		rejected := map[int64]bool{} // the entries a problem names, each counted once
		for _, p := range rep.Problems {
			switch {
			case p.Index < 0 && in.Problem == "":
				in.Problem = fmt.Sprintf("the receipt log does not verify (%s: %s), so no entry of it is evidence", p.Kind, p.Detail)
			case p.Index >= 0 && !rejected[p.Index]:
				rejected[p.Index] = true
				in.Rejected++
			}
		}
		e, v, err := c.AppendVerdict(goals.Evaluate(in))
		if err != nil {
			return false, err
		}
		if err := tx.AppendEntry(e, "", ""); err != nil {
			return false, err
		}
		verdict, idx = v, e.Index
		return true, tx.RecordVerdict(e.Index, g.ID, g.Revision, v.Done)
	})
	if err != nil {
		return nil, fmt.Errorf("verify goal %s: %w", g.ID, err)
	}
	return b.view(ctx, g, verdict, idx)
}

// attest records the operator's statement about a step of the goal's
// current revision, signed into the log.
func (b *Broker) attest(ctx context.Context, m *wire.GoalAttest) (wire.Message, error) {
	g, err := b.j.Goal(ctx, m.Goal)
	if err != nil {
		return nil, err
	}
	doc, spec, err := b.current(ctx, g)
	if err != nil {
		return nil, err
	}
	if _, err := stepOf(g, spec, m.Step); err != nil {
		return nil, err
	}
	s := receipt.OperatorStatement{Goal: g.ID, Revision: g.Revision, GoalDigest: doc.Digest, Step: m.Step,
		Statement: m.Statement, ID: journal.NewID("st-"), At: b.Stamp(b.cfg.Now())}
	err = b.appendLog(ctx, func(tx *journal.LogTx, c *receipt.Chain) (bool, error) {
		e, err := c.AppendStatement(s)
		if err != nil {
			return false, err
		}
		return true, tx.AppendEntry(e, "", "")
	})
	if err != nil {
		return nil, fmt.Errorf("record the operator's statement: %w", err)
	}
	return b.view(ctx, g, nil, 0)
}

// stepOf returns the step id of the goal's current document, or
// ARGUMENTS_INVALID naming the steps there are.
func stepOf(g journal.Goal, spec *goals.Spec, id string) (*goals.Step, error) {
	if spec == nil {
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "goal %s has no steps under revision %d; step %q is not one of them", g.ID, g.Revision, id)
	}
	st := spec.Step(id)
	if st == nil {
		ids := make([]string, len(spec.Steps))
		for i, s := range spec.Steps {
			ids[i] = s.ID
		}
		return nil, wire.Errorf(wire.CodeArgumentsInvalid, "goal %s revision %d has no step %q; its steps are %s", g.ID, g.Revision, id, strings.Join(ids, ", "))
	}
	return st, nil
}

// stepGate is the submit's gate for a step of goal g: the step must
// exist under the current revision (ARGUMENTS_INVALID), and each of its
// dependencies must be VERIFIED_DONE in the latest signed verdict under
// that revision (STEP_BLOCKED naming those that are not). It runs
// before the identity is resolved: nothing is asked for, consumed or
// started for a blocked step.
func (b *Broker) stepGate(ctx context.Context, g journal.Goal, id string) (*goals.Step, error) {
	_, spec, err := b.current(ctx, g)
	if err != nil {
		return nil, err
	}
	st, err := stepOf(g, spec, id)
	if err != nil || len(st.DependsOn) == 0 {
		return st, err
	}
	v, idx, err := b.latestVerdict(ctx, g)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, wire.Errorf(wire.CodeStepBlocked, "step %s of goal %s depends on %s, which is not VERIFIED_DONE under revision %d: "+
			"no verdict under this revision yet (run `broker goals verify %s` once it is done)", id, g.ID, strings.Join(st.DependsOn, ", "), g.Revision, g.ID)
	}
	var open []string
	for _, d := range st.DependsOn {
		i := slices.IndexFunc(v.Steps, func(s receipt.StepVerdict) bool { return s.ID == d })
		if i < 0 || !v.Steps[i].Done {
			open = append(open, d)
		}
	}
	if len(open) > 0 {
		return nil, wire.Errorf(wire.CodeStepBlocked, "step %s of goal %s depends on %s, which is not VERIFIED_DONE in the latest verdict (#%d) under revision %d",
			id, g.ID, strings.Join(open, ", "), idx, g.Revision)
	}
	return st, nil
}
