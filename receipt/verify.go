package receipt

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"warrant/internal/closed"
	"warrant/wire"

	"golang.org/x/mod/sumdb/tlog"
)

// ProblemKind classifies what Verify found wrong.
type ProblemKind uint8

// The problem kinds.
const (
	ProblemMalformed         ProblemKind = iota + 1 // not a canonical envelope/statement/predicate
	ProblemBadSignature                             // signed by this key id, but the signature fails: edited
	ProblemForeignKey                               // signed by another key: re-signed or forged
	ProblemMoved                                    // signed log index differs from its position: deleted, inserted or reordered
	ProblemChain                                    // previous-digest link broken
	ProblemTree                                     // a checkpoint's root differs from the log's
	ProblemTruncated                                // a checkpoint covers more entries than the log holds
	ProblemCheckpoint                               // a checkpoint is malformed or its signature fails
	ProblemBody                                     // a stored body does not match the receipt's digests
	ProblemBodyMissing                              // a body is gone without a deletion record
	ProblemDeletion                                 // a deletion record names a receipt it does not match
	ProblemSurvivors                                // a survivors record names a receipt it does not match
	ProblemUnanchored                               // entries after the newest checkpoint of a log checkpointed on every append
	ProblemTailCut                                  // the log is shorter than a checkpoint kept outside it
	ProblemLogCut                                   // the log is empty, yet a checkpoint kept outside it covers entries
	ProblemCheckpointSwapped                        // a checkpoint kept outside is not the key's, or not of this log
	ProblemKeySwapped                               // the log's own key is not the key the verifier holds
	ProblemMissingReceipts                          // receipts named outside the log are not in it, or name another action
	ProblemVerdict                                  // a verdict names a receipt or statement it does not match
)

var problemNames = []string{"", "malformed", "bad_signature", "foreign_key", "moved", "chain",
	"tree", "truncated", "checkpoint", "body", "body_missing", "deletion", "survivors",
	"unanchored", "tail_cut", "log_cut", "checkpoint_swapped", "key_swapped", "missing_receipts", "verdict"}

func (k ProblemKind) String() string               { return closed.String(problemNames, k) }
func (k ProblemKind) MarshalText() ([]byte, error) { return closed.Marshal(problemNames, k) }

// Problem is one finding, located by log index (-1 when it concerns the
// log as a whole) or by checkpoint number.
type Problem struct {
	Index      int64       `json:"index"`
	Checkpoint int         `json:"checkpoint,omitempty"` // 1-based; 0 when not about a checkpoint
	Kind       ProblemKind `json:"kind"`
	Detail     string      `json:"detail"`
}

// Pruned reports a body deleted by retention, and the record that says so.
type Pruned struct {
	Index     int64  `json:"index"`
	ReceiptID string `json:"receiptId"`
	Record    int64  `json:"deletionRecord"`
	At        Time   `json:"at"`
	Policy    string `json:"policy"`
}

// Report is the result of Verify.
type Report struct {
	Entries    int64      `json:"entries"`
	Receipts   int        `json:"receipts"`
	Deletions  int        `json:"deletions"`
	Survivors  int        `json:"survivors"`            // survivors records: processes of unknown actions found and ended
	Verdicts   int        `json:"verdicts"`             // goal verdicts of the evidence oracle
	Statements int        `json:"operatorStatements"`   // operator statements about goal steps
	Checkpoint *tlog.Tree `json:"checkpoint,omitempty"` // the latest verified one
	Unanchored int64      `json:"unanchored"`           // entries after the latest checkpoint
	Anchor     *tlog.Tree `json:"anchor,omitempty"`     // the largest checkpoint kept outside that the log extends
	Pruned     []Pruned   `json:"pruned,omitempty"`
	Problems   []Problem  `json:"problems,omitempty"`
}

// OK reports whether no problem was found. Entries after the latest
// checkpoint are chained and signed but could be cut off without trace;
// Unanchored says how many there are, and they are a problem only under
// Expect.Checkpointed.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) add(i int64, k ProblemKind, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{Index: i, Kind: k, Detail: fmt.Sprintf(format, args...)})
}

// Verify checks a whole log: every envelope's canonical form and
// signature, every statement and predicate, the position and previous
// digest of every entry, every stored body against its digests or a
// deletion record, and every checkpoint's signature and tree root. It
// reports each problem with its index and kind and never stops early.
func Verify(entries []Entry, checkpoints [][]byte, pub ed25519.PublicKey) *Report {
	return NewVerifier(pub).Verify(entries, checkpoints, Expect{})
}

// Expect is what a verifier knows of a log from outside it, beyond the
// key: each field adds checks to Verify.
type Expect struct {
	// Checkpointed says that the writer checkpoints every append in the
	// same transaction as the append (the broker does), so a log longer
	// than its newest checkpoint, or with entries and no checkpoint, has
	// lost checkpoints or gained entries outside the writer: unanchored.
	Checkpointed bool
	// Anchors are checkpoints kept outside the log (an operator's copy, a
	// witness file). The log must extend each: it holds at least its
	// entries, and its first N entries hash to its root. One that is not
	// signed by the key, or whose root differs, is checkpoint_swapped;
	// one covering more entries than the log holds is tail_cut, or
	// log_cut when the log is empty.
	Anchors [][]byte
	// Receipts maps each receipt id named outside the log (the journal's
	// actions) to the action naming it: each must be a receipt in the log
	// of that action, or missing_receipts names it.
	Receipts map[string]string
	// StoredKey is the public key stored beside the log (the state
	// directory's), when the verifier holds its own copy of the key: the
	// two must be equal, or key_swapped.
	StoredKey ed25519.PublicKey
}

// Verifier verifies logs under one key. It remembers the result of each
// envelope and checkpoint it saw in its last run, keyed by their exact
// bytes, so verifying a log again after an append (or an edit, or a
// reordering) re-checks only what changed. The memory is bounded by the
// last log verified.
type Verifier struct {
	pub       ed25519.PublicKey
	memo, now map[string]*checked
	cps, cpn  map[string]checkpointResult
}

type checkpointResult struct {
	tree tlog.Tree
	err  error
}

type checked struct {
	leaf      tlog.Hash
	payload   string // chain digest of the statement
	receipt   *Receipt
	deletion  *Deletion
	survivors *Survivors
	verdict   *Verdict
	statement *OperatorStatement
	kind      ProblemKind
	err       error
}

// NewVerifier returns a verifier for pub.
func NewVerifier(pub ed25519.PublicKey) *Verifier {
	return &Verifier{pub: pub}
}

// entry checks one envelope on its own, or returns the remembered result.
func (v *Verifier) entry(env []byte) *checked {
	c := v.memo[string(env)]
	if c == nil {
		c = checkEntry(env, v.pub)
	}
	v.now[string(env)] = c
	return c
}

// checkEntry is everything that can be checked of one envelope alone.
func checkEntry(env []byte, pub ed25519.PublicKey) *checked {
	c := &checked{leaf: tlog.RecordHash(env)}
	payload, kind, err := openEnvelope(env, pub)
	if err != nil {
		c.kind, c.err = kind, err
		return c
	}
	c.payload = digest(payload)
	st, err := decodeStatement(payload)
	if err == nil {
		switch st.PredicateType {
		case ReceiptPredicate:
			if c.receipt, err = DecodeReceipt(st.Predicate); err == nil && !subjectsMatch(st.Subject, receiptSubjects(c.receipt)) {
				err = fmt.Errorf("%w: subject is not the receipt's executable", ErrInvalid)
			}
		case DeletionPredicate:
			if c.deletion, err = decodeDeletion(st.Predicate); err == nil && !subjectsMatch(st.Subject, deletionSubjects(c.deletion)) {
				err = fmt.Errorf("%w: subject is not the deleted bodies' receipts", ErrInvalid)
			}
		case SurvivorsPredicate:
			if c.survivors, err = decodeSurvivors(st.Predicate); err == nil && !subjectsMatch(st.Subject, survivorsSubjects(c.survivors)) {
				err = fmt.Errorf("%w: subject is not the survivors' receipt", ErrInvalid)
			}
		case VerdictPredicate:
			if c.verdict, err = decodeCanonical[Verdict]("verdict", st.Predicate); err == nil &&
				!subjectsMatch(st.Subject, goalSubjects(c.verdict.Goal, c.verdict.Revision, c.verdict.GoalDigest)) {
				err = fmt.Errorf("%w: subject is not the verdict's goal revision", ErrInvalid)
			}
		case StatementPredicate:
			if c.statement, err = decodeCanonical[OperatorStatement]("operator statement", st.Predicate); err == nil &&
				!subjectsMatch(st.Subject, goalSubjects(c.statement.Goal, c.statement.Revision, c.statement.GoalDigest)) {
				err = fmt.Errorf("%w: subject is not the statement's goal revision", ErrInvalid)
			}
		default:
			err = fmt.Errorf("%w: predicate type %q", ErrInvalid, st.PredicateType)
		}
	}
	if err != nil {
		c.receipt, c.deletion, c.survivors, c.verdict, c.statement, c.kind, c.err = nil, nil, nil, nil, nil, ProblemMalformed, err
	}
	return c
}

// subjectsMatch reports whether a statement's subjects are exactly want.
func subjectsMatch(got, want []Subject) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Name != want[i].Name || len(got[i].Digest) != 1 || got[i].Digest["sha256"] != want[i].Digest["sha256"] {
			return false
		}
	}
	return true
}

// Verify verifies one log, with the checks x adds; see the package
// function Verify.
func (v *Verifier) Verify(entries []Entry, checkpoints [][]byte, x Expect) *Report {
	v.now, v.cpn = map[string]*checked{}, map[string]checkpointResult{}
	defer func() { v.memo, v.cps = v.now, v.cpn }()
	rep := &Report{Entries: int64(len(entries))}
	var stored hashReader
	prev := ""
	done := make([]*checked, len(entries))
	for i := range entries {
		pos := int64(i)
		c := v.entry(entries[i].Envelope)
		done[i] = c
		h, err := tlog.StoredHashesForRecordHash(pos, c.leaf, stored)
		if err != nil {
			panic("receipt: internal error: " + err.Error())
		}
		stored = append(stored, h...)
		if entries[i].Index != pos {
			rep.add(pos, ProblemMoved, "stored with index %d at position %d", entries[i].Index, pos)
		}
		if c.err != nil {
			rep.add(pos, c.kind, "%v", c.err)
			prev = c.payload
			continue
		}
		idx, back := c.links()
		if idx != pos {
			rep.add(pos, ProblemMoved, "entry signed as #%d found at position %d", idx, pos)
		}
		if pos > 0 && done[i-1].err == nil && back != prev {
			rep.add(pos, ProblemChain, "previous digest %.16s… does not match entry %d (%.16s…)", back, pos-1, prev)
		}
		if pos == 0 && back != "" {
			rep.add(pos, ProblemChain, "first entry names a previous entry %.16s…", back)
		}
		prev = c.payload
		switch {
		case c.receipt != nil:
			rep.Receipts++
		case c.deletion != nil:
			rep.Deletions++
		case c.verdict != nil:
			rep.Verdicts++
		case c.statement != nil:
			rep.Statements++
		default:
			rep.Survivors++
		}
	}
	v.checkBodies(rep, entries, done)
	checkSurvivors(rep, done)
	checkVerdicts(rep, done)
	v.checkCheckpoints(rep, checkpoints, stored)
	if x.Checkpointed && rep.Unanchored > 0 {
		rep.add(-1, ProblemUnanchored, "unanchored tail: the last %d of %d entries come after the newest valid checkpoint (of %d), "+
			"but the broker checkpoints every append: checkpoints were deleted or entries added outside the broker",
			rep.Unanchored, rep.Entries, rep.Entries-rep.Unanchored)
	}
	if x.StoredKey != nil && !x.StoredKey.Equal(v.pub) {
		rep.add(-1, ProblemKeySwapped, "pubkey swapped: the key stored beside the log (%s) is not the key you hold (%s); the log is verified under yours",
			KeyID(x.StoredKey), KeyID(v.pub))
	}
	v.checkAnchors(rep, x.Anchors, stored)
	checkNamed(rep, x.Receipts, done)
	return rep
}

// checkAnchors requires the log to extend every checkpoint kept outside.
func (v *Verifier) checkAnchors(rep *Report, anchors [][]byte, stored hashReader) {
	if len(anchors) == 0 {
		return
	}
	nv, err := NoteVerifier(v.pub)
	if err != nil {
		rep.add(-1, ProblemCheckpointSwapped, "%v", err)
		return
	}
	for i, msg := range anchors {
		t, err := openCheckpoint(msg, nv)
		switch {
		case err != nil:
			rep.add(-1, ProblemCheckpointSwapped, "checkpoint swapped: outside checkpoint %d is not a checkpoint signed by the key you hold (%v)", i+1, err)
		case t.N > 0 && rep.Entries == 0:
			rep.add(-1, ProblemLogCut, "whole-log cut: the log is empty, but outside checkpoint %d covers %d entries", i+1, t.N)
		case t.N > rep.Entries:
			rep.add(-1, ProblemTailCut, "tail cut: the log holds %d entries, but outside checkpoint %d covers %d: the last %d were deleted",
				rep.Entries, i+1, t.N, t.N-rep.Entries)
		default:
			root, err := tlog.TreeHash(t.N, stored)
			if err != nil {
				panic("receipt: internal error: " + err.Error())
			}
			if root != t.Hash {
				rep.add(-1, ProblemCheckpointSwapped, "checkpoint swapped: the first %d entries of the log do not hash to the root of outside checkpoint %d "+
					"(the checkpoint is of another log, or the log was rewritten)", t.N, i+1)
			} else if rep.Anchor == nil || t.N > rep.Anchor.N {
				rep.Anchor = &t
			}
		}
	}
}

// checkNamed requires every receipt named outside the log to be in it,
// as a receipt of the action naming it.
func checkNamed(rep *Report, named map[string]string, done []*checked) {
	if len(named) == 0 {
		return
	}
	in := map[string]string{}
	for _, c := range done {
		if c.receipt != nil {
			in[c.receipt.ID] = c.receipt.Action
		}
	}
	var missing, other []string
	for id, action := range named {
		got, ok := in[id]
		switch {
		case !ok:
			missing = append(missing, id)
		case got != action:
			other = append(other, fmt.Sprintf("%s (of %s, named by %s)", id, got, action))
		}
	}
	slices.Sort(missing)
	slices.Sort(other)
	if len(missing) > 0 {
		rep.add(-1, ProblemMissingReceipts, "missing receipts: the journal's actions name %d receipt(s) the log does not hold: %s",
			len(missing), strings.Join(missing, ", "))
	}
	if len(other) > 0 {
		rep.add(-1, ProblemMissingReceipts, "missing receipts: %d receipt(s) in the log belong to another action than the one naming them: %s",
			len(other), strings.Join(other, ", "))
	}
}

func (c *checked) links() (int64, string) {
	switch {
	case c.receipt != nil:
		return c.receipt.LogIndex, c.receipt.Previous
	case c.deletion != nil:
		return c.deletion.LogIndex, c.deletion.Previous
	case c.verdict != nil:
		return c.verdict.LogIndex, c.verdict.Previous
	case c.statement != nil:
		return c.statement.LogIndex, c.statement.Previous
	}
	return c.survivors.LogIndex, c.survivors.Previous
}

// checkSurvivors requires each survivors record to name an earlier
// unknown receipt of its action by that receipt's chain digest.
func checkSurvivors(rep *Report, done []*checked) {
	for i, c := range done {
		s := c.survivors
		if s == nil {
			continue
		}
		found := false
		for j := 0; j < i && !found; j++ {
			r := done[j].receipt
			found = r != nil && done[j].payload == s.ReceiptDigest && r.ID == s.ReceiptID &&
				r.Action == s.Action && r.Outcome == wire.OutcomeUnknown
		}
		if !found {
			rep.add(int64(i), ProblemSurvivors, "survivors record names receipt %s of %s, which is not an earlier unknown receipt of that action", s.ReceiptID, s.Action)
		}
	}
}

func (v *Verifier) checkCheckpoints(rep *Report, checkpoints [][]byte, stored hashReader) {
	nv, err := NoteVerifier(v.pub)
	if err != nil {
		rep.add(-1, ProblemCheckpoint, "%v", err)
		return
	}
	for i, msg := range checkpoints {
		p := Problem{Index: -1, Checkpoint: i + 1}
		cr, ok := v.cps[string(msg)]
		if !ok {
			cr.tree, cr.err = openCheckpoint(msg, nv)
		}
		v.cpn[string(msg)] = cr
		t, err := cr.tree, cr.err
		switch {
		case err != nil:
			p.Kind, p.Detail = ProblemCheckpoint, err.Error()
		case t.N > rep.Entries:
			p.Kind, p.Detail = ProblemTruncated, fmt.Sprintf("checkpoint covers %d entries; the log holds %d", t.N, rep.Entries)
		default:
			root, err := tlog.TreeHash(t.N, stored)
			if err != nil {
				panic("receipt: internal error: " + err.Error())
			}
			if root != t.Hash {
				p.Kind, p.Detail = ProblemTree, fmt.Sprintf("root of the first %d entries differs from the checkpoint", t.N)
			} else if rep.Checkpoint == nil || t.N >= rep.Checkpoint.N {
				rep.Checkpoint = &t
			}
		}
		if p.Kind != 0 {
			rep.Problems = append(rep.Problems, p)
		}
	}
	if rep.Checkpoint != nil {
		rep.Unanchored = rep.Entries - rep.Checkpoint.N
	} else {
		rep.Unanchored = rep.Entries
	}
}

// checkBodies matches each stored body against its receipt's digests, and
// each missing body against a later deletion record naming it.
func (v *Verifier) checkBodies(rep *Report, entries []Entry, done []*checked) {
	deleted := map[int64]Pruned{}
	for i, c := range done {
		if c.deletion == nil {
			continue
		}
		for _, b := range c.deletion.Bodies {
			if b.Index < 0 || b.Index >= int64(i) || done[b.Index].receipt == nil ||
				done[b.Index].payload != b.ReceiptDigest || done[b.Index].receipt.ID != b.ReceiptID {
				rep.add(int64(i), ProblemDeletion, "deletion record names receipt #%d (%s) it does not match", b.Index, b.ReceiptID)
				continue
			}
			deleted[b.Index] = Pruned{Index: b.Index, ReceiptID: b.ReceiptID, Record: int64(i),
				At: c.deletion.At, Policy: c.deletion.Policy}
		}
	}
	for i, c := range done {
		if c.receipt == nil {
			continue
		}
		pos := int64(i)
		if p, ok := deleted[pos]; ok {
			if entries[i].Body != nil {
				rep.add(pos, ProblemBody, "body present after deletion record #%d", p.Record)
			}
			rep.Pruned = append(rep.Pruned, p)
			continue
		}
		if err := checkBody(c.receipt, entries[i].Body); err != nil {
			kind := ProblemBody
			if entries[i].Body == nil {
				kind = ProblemBodyMissing
			}
			rep.add(pos, kind, "%v", err)
		}
	}
}

// checkBody checks body against the streams' retained sizes and digests.
func checkBody(r *Receipt, body []byte) error {
	var want uint64
	for _, s := range r.Streams {
		want += s.RetainedBytes
	}
	if uint64(len(body)) != want {
		return fmt.Errorf("body is %d bytes; the receipt retained %d", len(body), want)
	}
	for _, s := range r.Streams {
		part := body[:s.RetainedBytes]
		body = body[s.RetainedBytes:]
		if sum := sha256.Sum256(part); hex.EncodeToString(sum[:]) != s.RetainedSHA256 {
			return fmt.Errorf("%s body does not match its retained digest", s.Stream)
		}
	}
	return nil
}
