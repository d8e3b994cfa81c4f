package clid

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"

	"warrant/broker/view"
	"warrant/broker/view/receiptview"
	"warrant/receipt"
	"warrant/wire"
)

// The receipt commands' objects under the JSON convention (docs/json.md).
// A receipt's own body is the signed in-toto predicate, printed verbatim
// (its camelCase encoding is part of what is signed, docs/architecture.md
// §4); everything around it follows the convention.

// logEntry is one entry of `broker receipts list --json`: its kind and
// that kind's facts; the other kinds' are null.
type logEntry struct {
	Index     int64            `json:"index"`
	Kind      string           `json:"kind"` // receipt, deletion, survivors, verdict, statement or unreadable
	At        *string          `json:"at"`   // the signed time of the entry; null when unreadable
	Receipt   *listedReceipt   `json:"receipt"`
	Deletion  *listedDeletion  `json:"deletion"`
	Survivors *listedSurvivor  `json:"survivors"`
	Verdict   *listedVerdict   `json:"verdict"`
	Statement *listedStatement `json:"statement"`
	Error     *string          `json:"error"` // why an unreadable entry cannot be read
}

type listedReceipt struct {
	ID         string `json:"id"`
	Action     string `json:"action"`
	Outcome    string `json:"outcome"`
	Executable string `json:"executable"` // the file that ran
	// Requested, Argv and ArgvTruncated are the command as asked for:
	// the executable as requested, the arguments after argv[0] as a
	// listing carries them (wire.ListedArgv).
	Requested     string   `json:"requested"`
	Argv          []string `json:"argv"`
	ArgvTruncated bool     `json:"argv_truncated"`
	Body          string   `json:"body"` // retained, deleted or none
}

type listedDeletion struct {
	Bodies int `json:"bodies"` // how many retained bodies it deleted by policy
}

// listedSurvivor is a survivors record: processes a later broker found of
// an action whose outcome is unknown.
type listedSurvivor struct {
	Action       string   `json:"action"`
	ReceiptID    string   `json:"receipt_id"`
	Pids         []int    `json:"pids"`
	Commands     []string `json:"commands"`      // their command lines as found
	FoundIn      string   `json:"found_in"`      // its cgroups, or its process group
	IdentifiedBy string   `json:"identified_by"` // cgroup, pid-start, or none (reported, not ended)
	Gone         bool     `json:"gone"`          // and saw them ended
}

// listedVerdict is a goal verdict the oracle signed: whether the goal at
// that revision was verified done.
type listedVerdict struct {
	Goal         string `json:"goal"`
	GoalRevision uint64 `json:"goal_revision"`
	VerifiedDone bool   `json:"verified_done"`
}

// listedStatement is an operator statement attesting one step of a goal.
type listedStatement struct {
	Goal         string `json:"goal"`
	GoalRevision uint64 `json:"goal_revision"`
	Step         string `json:"step"`
}

func logEntryOf(en receipt.Entry) logEntry {
	o := receiptview.OpenEntry(en)
	v := logEntry{Index: en.Index}
	switch {
	case o.Receipt != nil:
		r := o.Receipt
		v.Kind, v.At = "receipt", view.Text(receiptview.Wall(r.Issued))
		argv, cut := wire.ListedArgv(r.Identity.Argv)
		v.Receipt = &listedReceipt{ID: r.ID, Action: r.Action, Outcome: r.Outcome.String(), Executable: r.Identity.Executable.Path,
			Requested: r.Identity.Requested, Argv: view.NonNil(argv), ArgvTruncated: cut, Body: bodyState(r, en)}
	case o.Deletion != nil:
		v.Kind, v.At, v.Deletion = "deletion", view.Text(receiptview.Wall(o.Deletion.At)), &listedDeletion{Bodies: len(o.Deletion.Bodies)}
	case o.Survivors != nil:
		s := o.Survivors
		v.Kind, v.At = "survivors", view.Text(receiptview.Wall(s.At))
		v.Survivors = &listedSurvivor{Action: s.Action, ReceiptID: s.ReceiptID, Pids: []int{}, Commands: []string{},
			FoundIn: s.FoundIn, IdentifiedBy: cmp.Or(s.IdentifiedBy, receipt.IdentifiedByCgroup), Gone: s.Gone}
		for _, p := range s.Processes {
			v.Survivors.Pids, v.Survivors.Commands = append(v.Survivors.Pids, int(p.Pid)), append(v.Survivors.Commands, p.Command)
		}
	case o.Verdict != nil:
		d := o.Verdict
		v.Kind, v.At, v.Verdict = "verdict", view.Text(receiptview.Wall(d.At)), &listedVerdict{Goal: d.Goal, GoalRevision: d.Revision, VerifiedDone: d.Done}
	case o.Statement != nil:
		st := o.Statement
		v.Kind, v.At, v.Statement = "statement", view.Text(receiptview.Wall(st.At)), &listedStatement{Goal: st.Goal, GoalRevision: st.Revision, Step: st.Step}
	default:
		v.Kind, v.Error = "unreadable", view.Text(o.Err.Error())
	}
	return v
}

// entryCursor names a log entry in a listing: its index.
func entryCursor(v logEntry) string { return strconv.FormatInt(v.Index, 10) }

// problem is what Verify found wrong; index is null for a problem of the
// whole log, checkpoint (1-based) null when it is not about a checkpoint.
type problem struct {
	Index      *int64 `json:"index"`
	Checkpoint *int   `json:"checkpoint"`
	Kind       string `json:"kind"`
	Detail     string `json:"detail"`
}

func problemsOf(ps []receipt.Problem) []problem {
	out := make([]problem, len(ps))
	for i, p := range ps {
		out[i] = problem{Kind: p.Kind.String(), Detail: p.Detail}
		if p.Index >= 0 {
			out[i].Index = &p.Index
		}
		if p.Checkpoint > 0 {
			out[i].Checkpoint = &p.Checkpoint
		}
	}
	return out
}

// pruned is a body deleted by retention and the record that says so.
type pruned struct {
	Index          int64  `json:"index"`
	ReceiptID      string `json:"receipt_id"`
	DeletionRecord int64  `json:"deletion_record"`
	At             string `json:"at"`
	Policy         string `json:"policy"`
}

func prunedOf(p *receipt.Pruned) pruned {
	return pruned{Index: p.Index, ReceiptID: p.ReceiptID, DeletionRecord: p.Record, At: receiptview.Wall(p.At), Policy: p.Policy}
}

// verification is `broker receipts verify --json`: the verifier's counts
// and verdict under the key keyid (the one given as --pubkey when
// key_given, else the state directory's); checkpoint is the latest
// verified one of the log, null when none is; anchor the largest of the
// outside_checkpoints given as --checkpoint that the log extends, null
// when none is.
type verification struct {
	KeyID              string      `json:"keyid"`
	KeyGiven           bool        `json:"key_given"`
	OK                 bool        `json:"ok"`
	Entries            int64       `json:"entries"`
	Receipts           int         `json:"receipts"`
	Deletions          int         `json:"deletions"`
	Survivors          int         `json:"survivors"`
	Verdicts           int         `json:"verdicts"`
	Statements         int         `json:"statements"`
	Checkpoints        int         `json:"checkpoints"`
	Checkpoint         *checkpoint `json:"checkpoint"`
	Unanchored         int64       `json:"unanchored"`
	OutsideCheckpoints int         `json:"outside_checkpoints"`
	Anchor             *checkpoint `json:"anchor"`
	Pruned             []pruned    `json:"pruned"`
	Problems           []problem   `json:"problems"`
}

// checkpoint is a tree head: how many entries it covers and its root.
type checkpoint struct {
	Size     int64  `json:"size"`
	RootHash string `json:"root_hash"`
}

func verificationOf(keyID string, checkpoints int, rep *receipt.Report) verification {
	v := verification{KeyID: keyID, OK: rep.OK(), Entries: rep.Entries, Receipts: rep.Receipts, Deletions: rep.Deletions,
		Survivors: rep.Survivors, Verdicts: rep.Verdicts, Statements: rep.Statements, Checkpoints: checkpoints, Unanchored: rep.Unanchored, Pruned: []pruned{},
		Problems: problemsOf(rep.Problems)}
	v.Checkpoint, v.Anchor = checkpointOf(rep.Checkpoint), checkpointOf(rep.Anchor)
	for i := range rep.Pruned {
		v.Pruned = append(v.Pruned, prunedOf(&rep.Pruned[i]))
	}
	return v
}

func checkpointOf(t *tlog.Tree) *checkpoint {
	if t == nil {
		return nil
	}
	return &checkpoint{Size: t.N, RootHash: hex.EncodeToString(t.Hash[:])}
}

// shown is `broker receipts show --json`: the receipt's place in the log
// and the verifier's verdict on it, beside the signed predicate verbatim.
type shown struct {
	Index       int64           `json:"index"`
	Verified    bool            `json:"verified"`
	Problems    []problem       `json:"problems"`
	BodyDeleted *pruned         `json:"body_deleted"`
	Receipt     json.RawMessage `json:"receipt"`
}

func shownOf(s *receiptview.Shown) shown {
	v := shown{Index: s.Index, Verified: s.Verified, Problems: problemsOf(s.Problems), Receipt: s.Predicate()}
	if s.Pruned != nil {
		p := prunedOf(s.Pruned)
		v.BodyDeleted = &p
	}
	return v
}

// exported is one entry of `broker receipts export --json`: its index and
// its DSSE envelope verbatim, as dsse-jsonl has it on a line.
type exported struct {
	Index    int64           `json:"index"`
	Envelope json.RawMessage `json:"envelope"`
}
