package clid

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"warrant/broker/cli"

	"golang.org/x/mod/sumdb/note"

	"warrant/broker"
	"warrant/broker/view"
	"warrant/broker/view/receiptview"
	"warrant/receipt"
)

// receiptCommands are the subcommands of `broker receipts`. All but
// prune read the journal directly, read-only and without the state lock,
// so they work beside a running broker.
var receiptCommands = map[string]cli.Subcommand{
	"list":       {Synopsis: "receipts list [--json]", Run: receiptsList},
	"show":       {Synopsis: "receipts show ID [--json]", Run: receiptsShow},
	"verify":     {Synopsis: "receipts verify [--pubkey FILE] [--checkpoint FILE] [--json]", Run: receiptsVerify},
	"checkpoint": {Synopsis: "receipts checkpoint", Run: receiptsCheckpoint},
	"export":     {Synopsis: "receipts export [--format dsse-jsonl]", Run: receiptsExport},
	"pubkey":     {Synopsis: "receipts pubkey", Run: receiptsPubkey},
	"prune":      {Synopsis: "receipts prune --older-than D [--json]", Run: receiptsPrune},
}

func runReceipts(e *cli.Env, args []string) error { return e.RunSub(receiptCommands, args) }

// readLog parses the flags and reads the state directory's receipt log.
func readLog(e *cli.Env, args []string, positional int) (*broker.ReceiptLog, []string, error) {
	pos, err := e.Parse(args, positional)
	if err != nil {
		return nil, nil, err
	}
	l, err := broker.ReadReceiptLog(context.Background(), e.State)
	return l, pos, err
}

func receiptsList(e *cli.Env, args []string) error {
	pf := e.PageFlags()
	l, _, err := readLog(e, args, 0)
	if err != nil {
		return err
	}
	if err := pf.Check(0); err != nil {
		return err
	}
	all := make([]logEntry, 0, len(l.Entries))
	for _, en := range l.Entries {
		all = append(all, logEntryOf(en))
	}
	page, err := cli.PageOf(all, pf, entryCursor)
	if err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.receipts.list/v1", page)
	}
	if len(all) == 0 {
		fmt.Fprintln(e.Stdout, "No receipts.")
	}
	for _, v := range page.Items {
		at := cli.Deref(v.At)
		switch v.Kind {
		case "receipt":
			r := v.Receipt
			command := cli.ListedCommand(r.Requested, r.Argv, r.ArgvTruncated)
			if r.Executable != r.Requested {
				command += " (ran " + view.ShellQuote(r.Executable) + ")"
			}
			fmt.Fprintf(e.Stdout, "#%-4d %s  %-18s action %s  %s  body %-8s  %s\n",
				v.Index, r.ID, r.Outcome, r.Action, at, r.Body, command)
		case "deletion":
			fmt.Fprintf(e.Stdout, "#%-4d deletion record: %d retained bod(ies) deleted by policy  %s\n", v.Index, v.Deletion.Bodies, at)
		case "survivors":
			s := v.Survivors
			ended := "ended"
			switch {
			case s.IdentifiedBy == receipt.IdentifiedByNone:
				ended = "reported, NOT ended: nothing proves they are the action's"
			case !s.Gone:
				ended = "NOT all ended"
			}
			fmt.Fprintf(e.Stdout, "#%-4d survivors record: process(es) %v of action %s (receipt %s, outcome unknown) found in %s and %s  %s\n",
				v.Index, s.Pids, s.Action, s.ReceiptID, s.FoundIn, ended, at)
		case "verdict":
			d := v.Verdict
			done := "not done"
			if d.VerifiedDone {
				done = "VERIFIED_DONE"
			}
			fmt.Fprintf(e.Stdout, "#%-4d goal verdict: goal %s revision %d %s  %s\n", v.Index, d.Goal, d.GoalRevision, done, at)
		case "statement":
			s := v.Statement
			fmt.Fprintf(e.Stdout, "#%-4d operator statement: goal %s revision %d step %s  %s\n", v.Index, s.Goal, s.GoalRevision, s.Step, at)
		default:
			fmt.Fprintf(e.Stdout, "#%-4d unreadable: %s (run `broker receipts verify`)\n", v.Index, cli.Deref(v.Error))
		}
	}
	e.WriteMore("receipts list", page.NextAfter)
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
// directory. A log that fails exits cli.ExitVerifyFailed.
func receiptsVerify(e *cli.Env, args []string) error {
	pubFile := e.Flags.String("pubkey", "", "verify under this public key (a file as `receipts pubkey` prints) instead of trusting the state directory's")
	cpFile := e.Flags.String("checkpoint", "", "a file of checkpoints kept elsewhere (`receipts checkpoint`'s output, or a witness file) that the log must extend")
	l, _, err := readLog(e, args, 0)
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
	if e.JSON {
		v := verificationOf(receipt.KeyID(key), len(l.Checkpoints), rep)
		v.KeyGiven, v.OutsideCheckpoints = pub != nil, len(anchors)
		if err := e.PrintJSON("warrant.receipts.verify/v1", v); err != nil {
			return err
		}
	} else {
		writeReport(e, l, key, pub != nil, len(anchors), rep)
	}
	if !rep.OK() {
		return cli.ExitStatus(cli.ExitVerifyFailed)
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
func writeReport(e *cli.Env, l *broker.ReceiptLog, key ed25519.PublicKey, given bool, anchors int, rep *receipt.Report) {
	w := e.Stdout
	fmt.Fprintf(w, "Receipt log of %s under key %s\n", e.State, receipt.KeyID(key))
	fmt.Fprintf(w, "  %d entries: %d receipt(s), %d deletion record(s), %d survivors record(s), %d goal verdict(s), %d operator statement(s); %d checkpoint(s)\n",
		rep.Entries, rep.Receipts, rep.Deletions, rep.Survivors, rep.Verdicts, rep.Statements, len(l.Checkpoints))
	if cp := rep.Checkpoint; cp != nil {
		fmt.Fprintf(w, "  latest verified checkpoint covers %d entries, root %s\n", cp.N, hex.EncodeToString(cp.Hash[:]))
	}
	if cp := rep.Anchor; cp != nil {
		fmt.Fprintf(w, "  the log extends the outside checkpoint of %d entries, root %s\n", cp.N, hex.EncodeToString(cp.Hash[:]))
	}
	for _, p := range rep.Pruned {
		fmt.Fprintf(w, "  body of #%d (%s) deleted %s by deletion record #%d under policy %q (deletion by policy, not physical erasure)\n",
			p.Index, p.ReceiptID, receiptview.Wall(p.At), p.Record, p.Policy)
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
func receiptsCheckpoint(e *cli.Env, args []string) error {
	l, _, err := readLog(e, args, 0)
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
	if e.JSON {
		return e.PrintJSON("warrant.receipts.checkpoint/v1", struct {
			KeyID    string `json:"keyid"`
			Size     int64  `json:"size"`
			RootHash string `json:"root_hash"`
			Note     string `json:"note"`
		}{receipt.KeyID(l.Public), t.N, hex.EncodeToString(t.Hash[:]), string(note)})
	}
	_, err = e.Stdout.Write(note)
	return err
}

// receiptsExport writes the log's DSSE envelopes, one per line. With
// --json it prints them instead as one listing object of the convention
// (each envelope verbatim beside its index), paged by --limit and --after
// like `receipts list`; without it, every entry, for DSSE tools.
func receiptsExport(e *cli.Env, args []string) error {
	format := e.Flags.String("format", "dsse-jsonl", "export format (dsse-jsonl: one DSSE envelope per line)")
	pf := e.PageFlags()
	l, _, err := readLog(e, args, 0)
	if err != nil {
		return err
	}
	if *format != "dsse-jsonl" {
		return cli.UsageError{Msg: fmt.Sprintf("format %q is not supported; use dsse-jsonl", *format)}
	}
	if !e.JSON {
		if pf.Given(e) {
			return cli.UsageError{Msg: "--limit and --after page the --json listing; dsse-jsonl exports every entry"}
		}
		return receipt.ExportDSSEJSONL(e.Stdout, l.Entries)
	}
	if err := pf.Check(0); err != nil {
		return err
	}
	all := make([]exported, len(l.Entries))
	for i, en := range l.Entries {
		all[i] = exported{Index: en.Index, Envelope: en.Envelope}
	}
	page, err := cli.PageOf(all, pf, func(v exported) string { return strconv.FormatInt(v.Index, 10) })
	if err != nil {
		return err
	}
	return e.PrintJSON("warrant.receipts.export/v1", struct {
		Format string `json:"format"`
		KeyID  string `json:"keyid"`
		view.List[exported]
	}{*format, receipt.KeyID(l.Public), page})
}

func receiptsPubkey(e *cli.Env, args []string) error {
	l, _, err := readLog(e, args, 0)
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
	if e.JSON {
		return e.PrintJSON("warrant.receipts.pubkey/v1", struct {
			KeyID              string `json:"keyid"`
			PublicKeyPEM       string `json:"public_key_pem"`
			CheckpointVerifier string `json:"checkpoint_verifier"`
		}{receipt.KeyID(l.Public), pemText, vkey})
	}
	fmt.Fprintf(e.Stdout, "%skey id (DSSE keyid): %s\ncheckpoint verifier (signed note): %s\n", pemText, receipt.KeyID(l.Public), vkey)
	return nil
}

func receiptsPrune(e *cli.Env, args []string) error {
	older := e.Flags.String("older-than", "", "delete the retained output of receipts issued longer ago than this (e.g. 720h or 30d)")
	if _, err := e.Parse(args, 0); err != nil {
		return err
	}
	age, err := parseAge(*older)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if err := e.Serving("receipts prune"); err != nil {
		return err
	}
	ctx := context.Background()
	b, err := broker.Open(ctx, broker.Config{StateDir: e.State})
	if err != nil {
		return fmt.Errorf("%w (prune needs the state directory to itself: stop `broker serve` first)", err)
	}
	defer b.Close()
	cutoff := time.Now().Add(-age)
	pruned, record, err := b.PruneReceipts(ctx, cutoff, "older-than "+*older)
	if err != nil {
		return err
	}
	if e.JSON {
		return e.PrintJSON("warrant.receipts.prune/v1", struct {
			Cutoff string  `json:"cutoff"`
			Pruned []int64 `json:"pruned"`
			Record *int64  `json:"deletion_record"` // null when nothing was deleted
		}{view.Time(cutoff), view.NonNil(pruned), recordPtr(pruned, record)})
	}
	if len(pruned) == 0 {
		fmt.Fprintf(e.Stdout, "No retained output of receipts issued before %s; nothing deleted.\n", cutoff.Format(time.RFC3339))
		return nil
	}
	idx := make([]string, len(pruned))
	for i, p := range pruned {
		idx[i] = "#" + strconv.FormatInt(p, 10)
	}
	fmt.Fprintf(e.Stdout, "Deleted the retained output of %d receipt(s) issued before %s: %s.\n"+
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
