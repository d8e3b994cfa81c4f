package receiptview

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"warrant/broker/view"
	"warrant/receipt"
	"warrant/wire"
)

// Opened is one log entry decoded for display. Display never vouches for
// an entry: show prints Verify's verdict beside it.
type Opened struct {
	// Predicate is the signed statement's predicate as signed.
	Predicate json.RawMessage
	Receipt   *receipt.Receipt
	Deletion  *receipt.Deletion
	Survivors *receipt.Survivors
	Verdict   *receipt.Verdict
	Statement *receipt.OperatorStatement
	Err       error
}

// OpenEntry decodes one log entry: a receipt, a deletion record, a
// survivors record, a goal verdict, an operator statement, or why it
// cannot be read.
func OpenEntry(en receipt.Entry) Opened {
	var env receipt.Envelope
	if err := json.Unmarshal(en.Envelope, &env); err != nil {
		return Opened{Err: fmt.Errorf("envelope: %w", err)}
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return Opened{Err: fmt.Errorf("payload: %w", err)}
	}
	var st receipt.Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		return Opened{Err: fmt.Errorf("statement: %w", err)}
	}
	switch st.PredicateType {
	case receipt.ReceiptPredicate:
		r, err := receipt.DecodeReceipt(st.Predicate)
		return Opened{Predicate: st.Predicate, Receipt: r, Err: err}
	case receipt.DeletionPredicate:
		return decodeAs(st.Predicate, "deletion record", func(o *Opened, d *receipt.Deletion) { o.Deletion = d })
	case receipt.SurvivorsPredicate:
		return decodeAs(st.Predicate, "survivors record", func(o *Opened, s *receipt.Survivors) { o.Survivors = s })
	case receipt.VerdictPredicate:
		return decodeAs(st.Predicate, "goal verdict", func(o *Opened, v *receipt.Verdict) { o.Verdict = v })
	case receipt.StatementPredicate:
		return decodeAs(st.Predicate, "operator statement", func(o *Opened, s *receipt.OperatorStatement) { o.Statement = s })
	}
	return Opened{Err: fmt.Errorf("unknown predicate type %q", st.PredicateType)}
}

// decodeAs decodes a predicate for display into a T and sets it with set;
// the Opened keeps the predicate as signed.
func decodeAs[T any](pred []byte, what string, set func(*Opened, *T)) Opened {
	var v T
	if err := json.Unmarshal(pred, &v); err != nil {
		return Opened{Err: fmt.Errorf("%s: %w", what, err)}
	}
	o := Opened{Predicate: pred}
	set(&o, &v)
	return o
}

// Shown is one receipt of a log snapshot beside the verifier's verdict on
// its entry: what `broker receipts show` and the MCP receipt tool show.
type Shown struct {
	Index    int64
	Verified bool
	Problems []receipt.Problem
	Pruned   *receipt.Pruned
	Receipt  *receipt.Receipt

	entry     receipt.Entry
	predicate json.RawMessage
}

// Predicate is the receipt's signed predicate verbatim.
func (s *Shown) Predicate() json.RawMessage { return s.predicate }

// FindReceipt returns the receipt among entries whose receipt id or action
// handle is id, judged by verify (called only once one is found), or nil.
// Problems of the whole log (index < 0) count against every entry.
func FindReceipt(entries []receipt.Entry, verify func() *receipt.Report, id string) *Shown {
	for _, en := range entries {
		o := OpenEntry(en)
		if o.Receipt == nil || (o.Receipt.ID != id && o.Receipt.Action != id) {
			continue
		}
		rep := verify()
		s := &Shown{Index: en.Index, Problems: []receipt.Problem{}, Receipt: o.Receipt, entry: en, predicate: o.Predicate}
		for _, p := range rep.Problems {
			if p.Index == en.Index || p.Index < 0 {
				s.Problems = append(s.Problems, p)
			}
		}
		for i := range rep.Pruned {
			if rep.Pruned[i].Index == en.Index {
				s.Pruned = &rep.Pruned[i]
			}
		}
		s.Verified = len(s.Problems) == 0
		return s
	}
	return nil
}

// Write renders the receipt for a person, verdict first.
func (s *Shown) Write(w io.Writer) { writeReceipt(w, s.entry, s.Receipt, s.Problems, s.Pruned) }

// Wall formats a receipt's wall-clock time under the JSON convention's
// layout (TimeLayout).
func Wall(t receipt.Time) string { return view.Time(time.Unix(0, t.WallUnixNs)) }

// writeReceipt renders r for a person: what ran, where, under which
// policy, how it ended, what was truncated or redacted, and what remains
// unknown.
func writeReceipt(w io.Writer, en receipt.Entry, r *receipt.Receipt, problems []receipt.Problem, pruned *receipt.Pruned) {
	verdict := "verified (signature, chain link, body and checkpoints)"
	if len(problems) > 0 {
		verdict = "NOT VERIFIED"
	}
	fmt.Fprintf(w, "Receipt %s, log entry #%d: %s\n", r.ID, en.Index, verdict)
	for _, p := range problems {
		fmt.Fprintf(w, "  PROBLEM %s: %s\n", p.Kind, p.Detail)
	}
	rev := "-"
	if r.GoalRevision != nil {
		rev = strconv.FormatUint(*r.GoalRevision, 10)
	}
	step := ""
	if r.Step != "" {
		step = " step " + r.Step
	}
	fmt.Fprintf(w, "Action    %s, session %q, goal %s revision %s%s, lease %s, approval %s\n",
		r.Action, r.Session, r.Goal, rev, step, r.LeaseID, r.ApprovalID)
	id := &r.Identity
	fmt.Fprintf(w, "What ran  %s (requested %s) sha256 %s\n          argv %s\n", id.Executable.Path,
		strconv.Quote(id.Requested), id.Executable.SHA256, quoteAll(id.Argv))
	if in := id.Interpreter; in != nil {
		fmt.Fprintf(w, "          interpreter %s sha256 %s\n", in.File.Path, in.File.SHA256)
	}
	fmt.Fprintf(w, "          fingerprint %s\n", r.Fingerprint)
	if c := r.Contract; c != nil {
		slots := make([]string, len(c.Args))
		for i, a := range c.Args {
			slots[i] = a.Slot + "=" + a.Kind
		}
		fmt.Fprintf(w, "Contract  %s sha256 %s, grant %s\n          parse %s\n", c.Name, c.Digest, c.Grant, strings.Join(slots, " "))
	}
	fmt.Fprintf(w, "Where     workspace %s (dev %d ino %d mnt %d), cwd %s\n", id.Workspace.Path,
		id.Workspace.Dev, id.Workspace.Ino, id.Workspace.MntID, id.Cwd.Path)
	fmt.Fprintf(w, "          environment names: %s\n", strings.Join(id.EnvNames, " "))
	fmt.Fprintf(w, "Policy    digest %s, profile %s, Landlock ABI >= %d\n          read+exec %s\n",
		id.PolicyDigest, id.Profile, id.Policy.MinLandlockABI, strings.Join(id.Policy.ReadExec, " "))
	if len(id.Policy.ReadEntries)+len(id.Policy.Excluded) > 0 {
		fmt.Fprintf(w, "          /etc entries %s\n          withheld %s\n", strings.Join(id.Policy.ReadEntries, " "), strings.Join(id.Policy.Excluded, " "))
	}
	fmt.Fprintf(w, "          read+write %s\n          devices %s\n", strings.Join(id.Policy.ReadWrite, " "), strings.Join(id.Policy.Devices, " "))
	lim := r.Limits
	fmt.Fprintf(w, "Limits    wall %s, grace %s, cpu %ds, file size %d, open files %d, output retained %d+%d, hard output %d%s; enforced by %s\n",
		time.Duration(lim.WallNs), time.Duration(lim.GraceNs), lim.CPUSeconds, lim.FileSize, lim.OpenFiles,
		lim.Retain, lim.Retain, lim.HardOutput, cgroupLimits(&lim), lim.EnforcedBy)
	writeUsage(w, r)
	if s := r.Sandbox; s != nil {
		filter := "seccomp " + s.SeccompDigest
		if s.SeatbeltDigest != "" {
			filter = "Seatbelt profile " + s.SeatbeltDigest
		}
		var executed string
		switch {
		case s.Binding == wire.Broken:
			executed = "the installed file changed during the run: what was executed is NOT known"
		case s.Binding == wire.InPlace:
			executed = "the installed file itself, bound by " + s.BoundBy
		case s.ExecutedSHA256 != id.Executable.SHA256:
			executed = "executed sha256 " + s.ExecutedSHA256 + " (NOT the approved executable)"
		default:
			executed = "executed sha256 " + s.ExecutedSHA256 + " (the approved executable)"
		}
		fmt.Fprintf(w, "Sandbox   Landlock ABI %d, %s, binding %s; %s\n", s.LandlockABI, filter, s.Binding, executed)
	}
	writeEnding(w, r)
	for _, s := range r.Streams {
		writeStream(w, &s, en, pruned)
	}
	if m := r.Metadata; m != nil {
		fmt.Fprintf(w, "Metadata  %d call(s) performed by the broker beneath the writable scope, %d refused", m.Performed, m.Refused)
		if m.BrokerCPUNs > 0 {
			fmt.Fprintf(w, "; broker CPU %s", time.Duration(m.BrokerCPUNs).Round(time.Microsecond))
		}
		if m.HeldNs > 0 {
			fmt.Fprintf(w, "; held back %s by the action's budget", time.Duration(m.HeldNs).Round(time.Millisecond))
		}
		fmt.Fprintln(w)
	}
	writeReceiptEgress(w, r.Egress)
	if r.Denials != nil {
		view.WriteRefused(w, r.Denials.Wire())
	}
	writeProtected(w, r.Protected)
	writeArtefacts(w, r)
	writeUnknown(w, r)
}

// writeArtefacts lists the step's declared outputs as the broker read
// them back once the group was gone.
func writeArtefacts(w io.Writer, r *receipt.Receipt) {
	if r.Artefacts == nil {
		return
	}
	fmt.Fprintf(w, "Artefacts of step %s, read back by the broker after the action:\n", r.Step)
	for _, a := range r.Artefacts {
		switch a.State {
		case receipt.FilePresent:
			fmt.Fprintf(w, "          %s: %d bytes, sha256 %s\n", a.Path, *a.Size, a.SHA256)
		case receipt.FileMissing:
			fmt.Fprintf(w, "          %s: missing\n", a.Path)
		default:
			fmt.Fprintf(w, "          %s: unchecked (%s)\n", a.Path, a.Why)
		}
	}
}

func writeEnding(w io.Writer, r *receipt.Receipt) {
	fmt.Fprintf(w, "Ended     outcome %s", r.Outcome)
	switch {
	case r.ExitCode != nil:
		fmt.Fprintf(w, ", exit code %d", *r.ExitCode)
	case r.Signal != nil:
		fmt.Fprintf(w, ", signal %d", *r.Signal)
	case r.ExecErrno != nil:
		fmt.Fprintf(w, ", exec errno %d", *r.ExecErrno)
	}
	if r.Pid != nil {
		fmt.Fprintf(w, ", pid %d", *r.Pid)
	}
	fmt.Fprintln(w)
	if r.Error != nil {
		fmt.Fprintf(w, "          %s: %s\n", r.Error.Code, r.Error.Message)
	}
	if r.Start != nil && r.End != nil {
		fmt.Fprintf(w, "          ran %s, from %s\n", time.Duration(r.End.MonoNs-r.Start.MonoNs), Wall(*r.Start))
	}
	if g := r.GroupGone; g != nil {
		fmt.Fprintf(w, "          whole process group confirmed gone (%s) at %s\n", g.Method, Wall(g.At))
	}
	fmt.Fprintf(w, "Events   ")
	for _, ev := range r.Events {
		fmt.Fprintf(w, " %s %s;", ev.Type, Wall(ev.At))
	}
	fmt.Fprintf(w, "\n          issued %s\n", Wall(r.Issued))
}

func writeStream(w io.Writer, s *receipt.StreamEvidence, en receipt.Entry, pruned *receipt.Pruned) {
	fmt.Fprintf(w, "%-9s observed %d bytes in %d chunk(s), %d after redaction; retained %d (head %d-%d, tail %d-%d), dropped %d",
		s.Stream, s.ObservedBytes, s.Chunks, s.RedactedBytes, s.RetainedBytes, s.Head.Start, s.Head.End,
		s.Tail.Start, s.Tail.End, s.DroppedBytes)
	if s.Truncation != 0 {
		fmt.Fprintf(w, "; truncated: %s", s.Truncation)
	}
	if s.WithheldBytes > 0 {
		fmt.Fprintf(w, "; %d raw bytes withheld (redactor failed)", s.WithheldBytes)
	}
	fmt.Fprintln(w)
	var hits []string
	for _, h := range s.Redactions {
		hits = append(hits, fmt.Sprintf("%s x%d", h.Type, h.Count))
	}
	if len(hits) == 0 {
		hits = []string{"none"}
	}
	fmt.Fprintf(w, "          redactions: %s (ruleset %s, %d exact secret value(s))\n", strings.Join(hits, ", "), s.RulesetID, s.ExactSecrets)
	switch {
	case pruned != nil:
		fmt.Fprintf(w, "          retained output deleted %s under policy %q (record #%d)\n", Wall(pruned.At), pruned.Policy, pruned.Record)
	case en.Body == nil && s.RetainedBytes > 0:
		fmt.Fprintf(w, "          retained output is MISSING without a deletion record\n")
	}
}

// cgroupLimits names the memory and process-count figures a cgroup
// enforced, and those it did not.
func cgroupLimits(l *receipt.Limits) string {
	var s string
	if l.MemoryBytes > 0 {
		s += fmt.Sprintf(", memory %d", l.MemoryBytes)
	}
	if l.Pids > 0 {
		s += fmt.Sprintf(", processes %d", l.Pids)
	}
	if e := l.EnforcedBy; e.Wall == receipt.EnforcedByBroker && (e.Memory == receipt.EnforcedByNone || e.Pids == receipt.EnforcedByNone) {
		s += ", memory or processes NOT limited on that host"
	}
	return s
}

// writeUsage says what the action's cgroups counted.
func writeUsage(w io.Writer, r *receipt.Receipt) {
	u := r.Usage
	if u == nil {
		return
	}
	var parts []string
	add := func(p *uint64, format string) {
		if p != nil {
			parts = append(parts, fmt.Sprintf(format, *p))
		}
	}
	add(u.MemoryPeakBytes, "memory peak %d bytes")
	add(u.OOMKills, "%d process(es) killed at the memory limit")
	add(u.PidsPeak, "at most %d processes and threads")
	add(u.PidsLimitHits, "%d fork(s) refused at the process limit")
	fmt.Fprintf(w, "Usage     %s\n", strings.Join(parts, ", "))
	if r.LimitReached != "" {
		fmt.Fprintf(w, "          ended by the %s limit\n", r.LimitReached)
	}
}

// writeProtected says what became of the workspace's protected paths.
func writeProtected(w io.Writer, p *receipt.Protected) {
	if p == nil {
		return
	}
	how := "detect: detected, not prevented"
	if p.By == receipt.ProtectedByMount {
		how = fmt.Sprintf("mount: %d bound read-only in the action's mount namespace; a change is one they did not cover", p.Binds)
	}
	fmt.Fprintf(w, "Protected %d entries recorded before the launch and after the group was gone (%s): ", p.Checked, how)
	if len(p.Changes) == 0 {
		fmt.Fprintln(w, "none changed")
		return
	}
	fmt.Fprintf(w, "%d changed\n", len(p.Changes))
	for _, c := range p.Changes {
		fmt.Fprintf(w, "          %s: %s -> %s\n", c.Path, c.Before, c.After)
	}
}

// writeUnknown lists what the receipt does not establish.
func writeUnknown(w io.Writer, r *receipt.Receipt) {
	var unknown []string
	if r.Sandbox == nil {
		unknown = append(unknown, "no sandbox facts (the launcher never reported any)")
	}
	if r.Pid == nil {
		unknown = append(unknown, "no process was observed")
	}
	if r.ExitCode == nil && r.Signal == nil {
		unknown = append(unknown, "no exit status or signal")
	}
	if r.GroupGone == nil {
		unknown = append(unknown, "no evidence that every process of the action is gone")
	}
	if len(r.Streams) == 0 {
		unknown = append(unknown, "no output was recorded")
	}
	if r.Protected == nil {
		unknown = append(unknown, "whether protected workspace paths (.git/hooks, .envrc, …) changed")
	}
	if len(unknown) == 0 {
		return
	}
	fmt.Fprintf(w, "Not known %s\n", strings.Join(unknown, "; "))
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, a := range s {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, " ") + "]"
}
