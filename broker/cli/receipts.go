package cli

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"warrant/broker"
	"warrant/broker/view"
	"warrant/receipt"
)

// receiptCommands are the subcommands of `broker receipts`. All but
// prune read the journal directly, read-only and without the state lock,
// so they work beside a running broker.
var receiptCommands = map[string]subcommand{
	"list":       {"receipts list [--json]", receiptsList},
	"show":       {"receipts show ID [--json]", receiptsShow},
	"verify":     {"receipts verify [--pubkey FILE] [--checkpoint FILE] [--json]", receiptsVerify},
	"checkpoint": {"receipts checkpoint", receiptsCheckpoint},
	"export":     {"receipts export [--format dsse-jsonl]", receiptsExport},
	"pubkey":     {"receipts pubkey", receiptsPubkey},
	"prune":      {"receipts prune --older-than D [--json]", receiptsPrune},
}

func runReceipts(e *env, args []string) error { return e.runSub(receiptCommands, args) }

// readLog parses the flags and reads the state directory's receipt log.
func (e *env) readLog(args []string, positional int) (*broker.ReceiptLog, []string, error) {
	pos, err := e.parse(args, positional)
	if err != nil {
		return nil, nil, err
	}
	l, err := broker.ReadReceiptLog(context.Background(), e.state)
	return l, pos, err
}

// listed is one log entry as `receipts list --json` prints it.
type listed struct {
	Index      int64    `json:"index"`
	Kind       string   `json:"kind"` // receipt, deletion, survivors, verdict, statement or unreadable
	ReceiptID  string   `json:"receipt_id,omitempty"`
	Action     string   `json:"action,omitempty"`
	Outcome    string   `json:"outcome,omitempty"`
	Executable string   `json:"executable,omitempty"`
	Issued     string   `json:"issued,omitempty"`
	Body       string   `json:"body,omitempty"` // retained, deleted or none
	Deleted    int      `json:"deleted_bodies,omitempty"`
	Survivors  []int    `json:"survivors,omitempty"`     // pids a later broker found of the action
	Commands   []string `json:"commands,omitempty"`      // their command lines as found
	FoundIn    string   `json:"found_in,omitempty"`      // its cgroups, or its process group
	Identified string   `json:"identified_by,omitempty"` // cgroup, pid-start, or none (reported, not ended)
	Gone       bool     `json:"gone,omitempty"`          // and saw ended
	Goal       string   `json:"goal,omitempty"`          // a verdict's or statement's goal
	Revision   uint64   `json:"goal_revision,omitempty"`
	Done       *bool    `json:"verified_done,omitempty"` // a verdict's finding
	Step       string   `json:"step,omitempty"`          // a statement's step
	Error      string   `json:"error,omitempty"`
}

func receiptsList(e *env, args []string) error {
	l, _, err := e.readLog(args, 0)
	if err != nil {
		return err
	}
	out := make([]listed, 0, len(l.Entries))
	for _, en := range l.Entries {
		o := view.OpenEntry(en)
		v := listed{Index: en.Index}
		switch {
		case o.Receipt != nil:
			r := o.Receipt
			v.Kind, v.ReceiptID, v.Action, v.Outcome = "receipt", r.ID, r.Action, r.Outcome.String()
			v.Executable, v.Issued, v.Body = r.Identity.Executable.Path, view.Wall(r.Issued), bodyState(r, en)
		case o.Deletion != nil:
			v.Kind, v.Issued, v.Deleted = "deletion", view.Wall(o.Deletion.At), len(o.Deletion.Bodies)
		case o.Survivors != nil:
			s := o.Survivors
			v.Kind, v.Issued, v.Action, v.ReceiptID, v.Gone = "survivors", view.Wall(s.At), s.Action, s.ReceiptID, s.Gone
			v.FoundIn, v.Identified = s.FoundIn, cmp.Or(s.IdentifiedBy, receipt.IdentifiedByCgroup)
			for _, p := range s.Processes {
				v.Survivors, v.Commands = append(v.Survivors, int(p.Pid)), append(v.Commands, p.Command)
			}
		case o.Verdict != nil:
			d := o.Verdict
			v.Kind, v.Issued, v.Goal, v.Revision, v.Done = "verdict", view.Wall(d.At), d.Goal, d.Revision, &d.Done
		case o.Statement != nil:
			s := o.Statement
			v.Kind, v.Issued, v.Goal, v.Revision, v.Step = "statement", view.Wall(s.At), s.Goal, s.Revision, s.Step
		default:
			v.Kind, v.Error = "unreadable", o.Err.Error()
		}
		out = append(out, v)
	}
	if e.json {
		return e.printJSON(out)
	}
	if len(out) == 0 {
		fmt.Fprintln(e.stdout, "No receipts.")
	}
	for _, v := range out {
		switch v.Kind {
		case "receipt":
			fmt.Fprintf(e.stdout, "#%-4d %s  %-18s %s  action %s  %s  body %s\n",
				v.Index, v.ReceiptID, v.Outcome, strconv.Quote(v.Executable), v.Action, v.Issued, v.Body)
		case "deletion":
			fmt.Fprintf(e.stdout, "#%-4d deletion record: %d retained bod(ies) deleted by policy  %s\n", v.Index, v.Deleted, v.Issued)
		case "survivors":
			ended := "ended"
			switch {
			case v.Identified == receipt.IdentifiedByNone:
				ended = "reported, NOT ended: nothing proves they are the action's"
			case !v.Gone:
				ended = "NOT all ended"
			}
			fmt.Fprintf(e.stdout, "#%-4d survivors record: process(es) %v of action %s (receipt %s, outcome unknown) found in %s and %s  %s\n",
				v.Index, v.Survivors, v.Action, v.ReceiptID, v.FoundIn, ended, v.Issued)
		case "verdict":
			done := "not done"
			if *v.Done {
				done = "VERIFIED_DONE"
			}
			fmt.Fprintf(e.stdout, "#%-4d goal verdict: goal %s revision %d %s  %s\n", v.Index, v.Goal, v.Revision, done, v.Issued)
		case "statement":
			fmt.Fprintf(e.stdout, "#%-4d operator statement: goal %s revision %d step %s  %s\n", v.Index, v.Goal, v.Revision, v.Step, v.Issued)
		default:
			fmt.Fprintf(e.stdout, "#%-4d unreadable: %s (run `broker receipts verify`)\n", v.Index, v.Error)
		}
	}
	return nil
}

func bodyState(r *receipt.Receipt, en receipt.Entry) string {
	var retained uint64
	for _, s := range r.Streams {
		retained += s.RetainedBytes
	}
	switch {
	case en.Body != nil:
		return "retained"
	case retained > 0:
		return "deleted"
	}
	return "none"
}

// receiptsVerify verifies the log; with --pubkey and --checkpoint it
// holds the log to a key and checkpoints kept outside the state
// directory. A log that fails exits exitVerifyFailed.
func receiptsVerify(e *env, args []string) error {
	pubFile := e.fs.String("pubkey", "", "verify under this public key (a file as `receipts pubkey` prints) instead of trusting the state directory's")
	cpFile := e.fs.String("checkpoint", "", "a file of checkpoints kept elsewhere (`receipts checkpoint`'s output, or a witness file) that the log must extend")
	l, _, err := e.readLog(args, 0)
	if err != nil {
		return err
	}
	var pub ed25519.PublicKey
	if *pubFile != "" {
		if pub, err = readPubkey(*pubFile); err != nil {
			return err
		}
	}
	var anchors [][]byte
	if *cpFile != "" {
		raw, err := os.ReadFile(*cpFile)
		if err != nil {
			return fmt.Errorf("read --checkpoint: %w", err)
		}
		if anchors, err = receipt.ParseCheckpoints(raw); err != nil {
			return fmt.Errorf("--checkpoint %s: %w", *cpFile, err)
		}
	}
	rep := l.VerifyAnchored(pub, anchors)
	key := l.Public
	if pub != nil {
		key = pub
	}
	if e.json {
		if err := e.printJSON(struct {
			KeyID string `json:"keyid"`
			OK    bool   `json:"ok"`
			*receipt.Report
		}{receipt.KeyID(key), rep.OK(), rep}); err != nil {
			return err
		}
	} else {
		writeReport(e, l, key, pub != nil, len(anchors), rep)
	}
	if !rep.OK() {
		return exitStatus(exitVerifyFailed)
	}
	return nil
}

// readPubkey reads an ed25519 public key from a file holding a PEM
// PUBLIC KEY block, as `receipts pubkey` prints (what follows the block
// is ignored).
func readPubkey(path string) (ed25519.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read --pubkey: %w", err)
	}
	blk, _ := pem.Decode(raw)
	if blk == nil || blk.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("--pubkey %s: no PEM PUBLIC KEY block (save the output of `broker receipts pubkey`)", path)
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("--pubkey %s: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("--pubkey %s: not an ed25519 key", path)
	}
	return pub, nil
}

// writeReport prints rep of l verified under key: the one given as
// --pubkey (given), or the state directory's; anchors is the number of
// checkpoints given as --checkpoint.
func writeReport(e *env, l *broker.ReceiptLog, key ed25519.PublicKey, given bool, anchors int, rep *receipt.Report) {
	w := e.stdout
	fmt.Fprintf(w, "Receipt log of %s under key %s\n", e.state, receipt.KeyID(key))
	fmt.Fprintf(w, "  %d entries: %d receipt(s), %d deletion record(s), %d survivors record(s), %d goal verdict(s), %d operator statement(s); %d checkpoint(s)\n",
		rep.Entries, rep.Receipts, rep.Deletions, rep.Survivors, rep.Verdicts, rep.Statements, len(l.Checkpoints))
	if cp := rep.Checkpoint; cp != nil {
		fmt.Fprintf(w, "  latest verified checkpoint covers %d entries, root %s\n", cp.N, cp.Hash)
	}
	if cp := rep.Anchor; cp != nil {
		fmt.Fprintf(w, "  the log extends the outside checkpoint of %d entries, root %s\n", cp.N, cp.Hash)
	}
	for _, p := range rep.Pruned {
		fmt.Fprintf(w, "  body of #%d (%s) deleted %s by deletion record #%d under policy %q (deletion by policy, not physical erasure)\n",
			p.Index, p.ReceiptID, view.Wall(p.At), p.Record, p.Policy)
	}
	for _, p := range rep.Problems {
		where := fmt.Sprintf("entry #%d", p.Index)
		switch {
		case p.Checkpoint > 0:
			where = fmt.Sprintf("checkpoint %d", p.Checkpoint)
		case p.Index < 0:
			where = "log"
		}
		fmt.Fprintf(w, "  PROBLEM %s: %s: %s\n", where, p.Kind, p.Detail)
	}
	if !rep.OK() {
		fmt.Fprintf(w, "FAILED: %d problem(s); the log cannot be trusted as the broker wrote it.\n", len(rep.Problems))
		return
	}
	fmt.Fprintln(w, "OK: every signature, chain link, stored body and checkpoint verifies; the newest checkpoint covers the whole log; every receipt the journal's actions name is in it.")
	switch {
	case given && anchors > 0:
		fmt.Fprintf(w, "OK: the state directory's key is the key you gave, and the log extends all %d checkpoint(s) you kept.\n", anchors)
	case given:
		fmt.Fprintln(w, "OK: the state directory's key is the key you gave. No checkpoint kept elsewhere was given: "+
			"a log cut together with its checkpoints and the actions naming its receipts passes; pass --checkpoint.")
	case anchors > 0:
		fmt.Fprintf(w, "The log extends all %d checkpoint(s) you gave, under the state directory's own key, which whoever rewrites the state directory can replace; pass --pubkey.\n", anchors)
	default:
		fmt.Fprintln(w, "Nothing held outside the state directory was checked: a log cut together with its checkpoints and the actions naming its receipts, "+
			"or re-signed with a new key, passes. Keep `broker receipts pubkey` and `broker receipts checkpoint` elsewhere and pass them as --pubkey and --checkpoint.")
	}
}

// receiptsCheckpoint prints the newest checkpoint, as a signed note to
// publish or keep, once the whole log verifies.
func receiptsCheckpoint(e *env, args []string) error {
	l, _, err := e.readLog(args, 0)
	if err != nil {
		return err
	}
	if rep := l.Verify(); !rep.OK() {
		return fmt.Errorf("the receipt log fails verification (%d problem(s); run `broker receipts verify`): no checkpoint printed", len(rep.Problems))
	}
	if len(l.Checkpoints) == 0 {
		return errors.New("the receipt log is empty: no checkpoint yet")
	}
	note := l.Checkpoints[len(l.Checkpoints)-1]
	t, err := receipt.OpenCheckpoint(note, l.Public)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(map[string]any{"keyid": receipt.KeyID(l.Public), "size": t.N, "root": t.Hash.String(), "note": string(note)})
	}
	_, err = e.stdout.Write(note)
	return err
}

func receiptsExport(e *env, args []string) error {
	format := e.fs.String("format", "dsse-jsonl", "export format (dsse-jsonl: one DSSE envelope per line)")
	l, _, err := e.readLog(args, 0)
	if err != nil {
		return err
	}
	if *format != "dsse-jsonl" {
		return usageError{fmt.Sprintf("format %q is not supported; use dsse-jsonl", *format)}
	}
	return receipt.ExportDSSEJSONL(e.stdout, l.Entries)
}

func receiptsPubkey(e *env, args []string) error {
	l, _, err := e.readLog(args, 0)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(l.Public)
	if err != nil {
		return fmt.Errorf("encode public key: %w", err)
	}
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	vkey, err := note.NewEd25519VerifierKey(receipt.CheckpointKeyName, l.Public)
	if err != nil {
		return fmt.Errorf("encode checkpoint verifier key: %w", err)
	}
	if e.json {
		return e.printJSON(map[string]string{"keyid": receipt.KeyID(l.Public), "public_key_pem": pemText, "checkpoint_verifier": vkey})
	}
	fmt.Fprintf(e.stdout, "%skey id (DSSE keyid): %s\ncheckpoint verifier (signed note): %s\n", pemText, receipt.KeyID(l.Public), vkey)
	return nil
}

func receiptsPrune(e *env, args []string) error {
	older := e.fs.String("older-than", "", "delete the retained output of receipts issued longer ago than this (e.g. 720h or 30d)")
	if _, err := e.parse(args, 0); err != nil {
		return err
	}
	age, err := parseAge(*older)
	if err != nil {
		return usageError{err.Error()}
	}
	ctx := context.Background()
	b, err := broker.Open(ctx, broker.Config{StateDir: e.state})
	if err != nil {
		return fmt.Errorf("%w (prune needs the state directory to itself: stop `broker serve` first)", err)
	}
	defer b.Close()
	cutoff := time.Now().Add(-age)
	pruned, record, err := b.PruneReceipts(ctx, cutoff, "older-than "+*older)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(struct {
			Cutoff string  `json:"cutoff"`
			Pruned []int64 `json:"pruned"`
			Record *int64  `json:"deletion_record"`
		}{cutoff.UTC().Format(time.RFC3339), nonNil(pruned), recordPtr(pruned, record)})
	}
	if len(pruned) == 0 {
		fmt.Fprintf(e.stdout, "No retained output of receipts issued before %s; nothing deleted.\n", cutoff.Format(time.RFC3339))
		return nil
	}
	idx := make([]string, len(pruned))
	for i, p := range pruned {
		idx[i] = "#" + strconv.FormatInt(p, 10)
	}
	fmt.Fprintf(e.stdout, "Deleted the retained output of %d receipt(s) issued before %s: %s.\n"+
		"Signed deletion record #%d names them; their digests and counters remain. This records deletion by policy, not physical erasure.\n",
		len(pruned), cutoff.Format(time.RFC3339), strings.Join(idx, " "), record)
	return nil
}

func recordPtr(pruned []int64, record int64) *int64 {
	if len(pruned) == 0 {
		return nil
	}
	return &record
}

// parseAge parses a Go duration, or a whole number of days as "30d".
func parseAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("--older-than is required")
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(d, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("--older-than %q: not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	age, err := time.ParseDuration(s)
	if err != nil || age < 0 {
		return 0, fmt.Errorf("--older-than %q: not a duration", s)
	}
	return age, nil
}
