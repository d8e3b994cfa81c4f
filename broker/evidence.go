package broker

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"warrant/broker/internal/contract"
	"warrant/broker/internal/goals"
	"warrant/broker/internal/journal"
	"warrant/broker/internal/protect"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/receipt"
	"warrant/wire"
)

// The last room of the pipeline: what the executor observed becomes
// evidence. An observer per action journals each lifecycle event as it
// is reported, and at the end builds the receipt from the journal's facts
// (as its checkpoint wrote them) plus the observation, seals it and
// records the result in one transaction.

// observer is the runner.Observer of one action.
type observer struct {
	b      *Broker
	handle string
	// checkpointed is the action's record as its checkpoint wrote it
	// (journal.Lease.Checkpointed), carried rather than read back; nil:
	// the receipt reads the journal.
	checkpointed *journal.Record
	protected    *protect.Snapshot // the protected paths before the launch; nil where not recorded
	outputs      struct {
		ws    *os.File // the action's workspace, held for the read-back; nil without outputs
		paths []string // the step's declared outputs
	}
}

// release gives up what the observer holds for an action that will not
// be observed.
func (o *observer) release() {
	if o.protected != nil {
		o.protected.Release()
		o.protected = nil
	}
	if o.outputs.ws != nil {
		o.outputs.ws.Close()
		o.outputs.ws = nil
	}
}

// artefacts reads the step's declared outputs back beneath the action's
// workspace once an action that exited is confirmed gone (before that,
// something of it may still be writing them): each is listed present
// with its size and SHA-256, missing, or unchecked with the reason. A
// missing output is a fact of the receipt, not a failure of the run.
func (o *observer) artefacts(obs *runner.Observation) []receipt.ReadBack {
	ws := o.outputs.ws
	o.outputs.ws = nil
	if ws == nil {
		return nil
	}
	defer ws.Close()
	if obs.Run.Outcome != wire.Exited || !obs.Run.GroupGone || obs.Run.Started.IsZero() {
		return nil
	}
	out := make([]receipt.ReadBack, len(o.outputs.paths))
	for i, p := range o.outputs.paths {
		out[i], _ = goals.ReadBeneath(ws, p, false)
	}
	return out
}

// Launched journals the action's first process, by which a later broker
// finds what of it outlived this one.
func (o *observer) Launched(origin lifecycle.Origin) error {
	return o.b.j.RecordOrigin(context.Background(), o.handle, journal.Origin(origin))
}

// Event journals STARTED (the action is running), TERM_SENT and KILL_SENT
// as they happen. TERMINATED and UNKNOWN_TERMINATION are recorded with
// the result.
func (o *observer) Event(e lifecycle.Event) {
	ctx := context.Background()
	var err error
	switch e.Kind {
	case receipt.EventStarted:
		err = o.b.j.MarkRunning(ctx, o.handle)
		o.b.notify()
	case receipt.EventTermSent, receipt.EventKillSent:
		err = o.b.j.RecordEvent(ctx, o.handle, e.Kind.String(), e.Detail)
	}
	if err != nil {
		o.b.cfg.Logf("action %s: journal %s: %v", o.handle, e.Kind, err)
	}
}

// End seals the action's receipt and records its result in one
// transaction. If that fails the result is still recorded, without a
// receipt; if even that fails the action stays in flight in the journal
// and becomes unknown at the next start: the honest answer. Unless the
// outcome is unknown, it first removes the action's private directories,
// so that whoever sees the result also sees them gone.
func (o *observer) End(obs *runner.Observation) {
	ctx := context.Background()
	b := o.b
	later := b.adirs.Refill // an unknown action's directories are kept; the next spare is made all the same
	if obs.Result.Outcome != wire.OutcomeUnknown {
		later = b.removeActionDirs(o.handle) // renamed away now, deleted once the end is recorded
	}
	defer later()
	// The waiters the end woke answer before the work it leaves behind
	// (removing the directories, the next warm launcher) takes this
	// goroutine's processor: woken, each is queued on it and may wait
	// there until this one blocks or yields, and many short system calls
	// block nothing.
	defer runtime.Gosched()
	defer b.cfg.Output.End(o.handle) // after the end is recorded: followers then find it
	checked := o.protectedChanges(obs)
	artefacts := o.artefacts(obs)
	rc, err := b.observedReceipt(ctx, o.handle, o.checkpointed, obs)
	if err == nil && checked != nil {
		rc.Protected = checked
	}
	if err == nil {
		rc.Artefacts = artefacts
	}
	if err == nil {
		_, err = b.finishWithReceipt(ctx, obs.Result, rc, obs.Streams...) // adds the streams' evidence
	}
	if err == nil {
		return
	}
	// The result is still a fact: record it without a receipt rather than
	// leave the action in flight (its session BUSY, its waiters waiting).
	b.cfg.Logf("action %s: seal its receipt: %v; recording the result without one", o.handle, err)
	if err := b.j.Finish(ctx, o.handle, obs.Result); err != nil {
		b.cfg.Logf("action %s: record its end: %v; it becomes unknown at the next start", o.handle, err)
	}
	b.notify()
}

// protectedChanges compares the protected paths with their state before
// the launch, once a started group is confirmed gone (before that,
// something of the action may still be writing them, and nothing is
// claimed), and puts the differences into the result. It returns the
// receipt's record of them, or nil.
func (o *observer) protectedChanges(obs *runner.Observation) *receipt.Protected {
	before := o.protected
	o.protected = nil
	if before == nil {
		return nil
	}
	if !obs.Run.GroupGone || obs.Run.Started.IsZero() {
		before.Release()
		return nil
	}
	changes := protect.Diff(before, before.Again())
	if n := len(changes); n > wire.MaxProtectedChanges {
		changes = append(changes[:wire.MaxProtectedChanges-1], wire.ProtectedChange{
			Path: fmt.Sprintf("(and %d more)", n-wire.MaxProtectedChanges+1), Before: protect.Unchecked, After: protect.Unchecked})
	}
	obs.Result.ProtectedChanges = changes
	p := &receipt.Protected{By: receipt.ProtectedByDetect, Checked: before.Len(), Changes: changes}
	if r := obs.Run.Ready; r != nil && r.MountNS {
		p.By, p.Binds = receipt.ProtectedByMount, int(r.Protected)
	}
	return p
}

// Stamp returns t on the receipt clocks: the wall clock, and the broker's
// monotonic clock measured from Open. A t read from time.Now carries a
// monotonic reading and is placed exactly; a time read back from the
// journal (wall clock only) is placed by its wall-clock distance from
// Open, which is negative for events before this broker started.
func (b *Broker) Stamp(t time.Time) receipt.Time {
	return receipt.Stamp(t.Sub(b.opened), t)
}

// observedReceipt is the receipt of a checkpointed action that the
// executor ran: every fact the broker journalled (ids, session, goal and
// revision, lease and approval, identity with environment names only,
// fingerprint, the REQUESTED, APPROVED and EXECUTING events), the
// profile's limits with what enforced each (the broker's timer and count,
// the launcher's rlimits, the action's cgroups for memory and processes
// where the host has them; "none" throughout for an action that never
// reached Ready), and what the lifecycle observed: sandbox facts, start,
// end, pid, exit or signal, group gone, outcome, what the cgroups
// counted and whether the memory limit ended it, what a started action
// with an egress grant connected to, STARTED … TERMINATED. The journal's
// facts are checkpointed, the action's record as its checkpoint wrote it,
// where the caller holds it (nil: read from the journal).
func (b *Broker) observedReceipt(ctx context.Context, handle string, checkpointed *journal.Record, obs *runner.Observation) (*receipt.Receipt, error) {
	rc, err := b.journalledReceipt(ctx, handle, checkpointed, receipt.EventExecuting)
	if err != nil {
		return nil, fmt.Errorf("prepare receipt of %s: %w", handle, err)
	}
	res := obs.Run
	rc.Limits = receipt.LimitsOf(rc.Identity.Profile, receipt.Uniform(receipt.EnforcedByNone)) // the launcher applied nothing
	if res.Ready != nil {
		rc.Limits = receipt.LimitsOf(rc.Identity.Profile, receipt.Launched(res.Enforced.Memory.EnforcedBy(), res.Enforced.Pids.EnforcedBy()))
		rc.Sandbox = receipt.SandboxOf(res.Ready)
		if !res.Started.IsZero() && (res.MetadataDone > 0 || res.MetadataRefused > 0 || res.Denials != nil && res.Denials.Total > 0) {
			rc.Metadata = &receipt.Metadata{Performed: res.MetadataDone, Refused: res.MetadataRefused,
				BrokerCPUNs: uint64(max(res.MetadataCPU, 0)), HeldNs: uint64(max(res.MetadataHeld, 0))}
		}
		if !res.Started.IsZero() {
			rc.Denials = receipt.DenialsOf(res.Denials, b.Stamp) // nil where nothing watched
			if res.Egress != nil {
				rc.Egress = receipt.EgressOf(res.Egress, b.Stamp) // in place of the grant alone (journalledReceipt)
			}
		}
		if obs.BoundBy != "" {
			rc.Sandbox.BoundBy = obs.BoundBy
			if obs.BoundBy == "read-lease" || obs.BoundBy == "unwritable" {
				rc.Sandbox.ExecutedSHA256 = rc.Identity.Executable.SHA256 // no writer could change them before the exec
			}
		}
		if obs.WitnessFailed != "" {
			rc.Sandbox.Binding = wire.Broken // what was executed is not known
			b.cfg.Logf("action %s: binding broken: %s", handle, obs.WitnessFailed)
		}
	}
	rc.Outcome = res.Outcome
	if res.Err != nil {
		rc.Error = &receipt.Refusal{Code: res.Err.Code, Message: res.Err.Message}
	}
	if res.Errno != 0 {
		errno := res.Errno
		rc.ExecErrno = &errno
	}
	for _, e := range obs.Events {
		at := b.Stamp(e.Wall)
		rc.Events = append(rc.Events, receipt.Event{Type: e.Kind, At: at})
		if e.Kind == receipt.EventStarted {
			pid := int64(res.Pid)
			rc.Start, rc.Pid = &at, &pid
		}
	}
	if rc.Start != nil && res.RootExited {
		end := b.Stamp(res.RootExitAt) // the root's exit; the group's end is GroupGone.At
		rc.End = &end
	}
	rc.ExitCode = runner.ExitCode(res)
	if res.Signal != 0 {
		sig := uint8(res.Signal)
		rc.Signal = &sig
	}
	if res.GroupGone {
		m := receipt.GonePgidESRCH
		switch {
		case res.ByCgroup:
			m = receipt.GoneCgroupEmpty
		case res.LeaversUntracked:
			m = receipt.GoneProcessGroupOnly
		}
		rc.GroupGone = &receipt.GroupGone{Method: m, At: b.Stamp(res.GoneAt)}
	}
	usage(rc, res)
	return rc, nil
}

// usage records what a started action's cgroups counted, each counter
// only where a cgroup enforced its limit, and that the memory limit was
// reached when the kernel killed a process of it there.
func usage(rc *receipt.Receipt, res *lifecycle.Result) {
	u := res.Usage
	if u == nil || rc.Start == nil {
		return
	}
	out := &receipt.Usage{}
	if res.Enforced.Memory != lifecycle.Unenforced {
		out.OOMKills = &u.OOMKills
		if u.MemoryPeak > 0 {
			out.MemoryPeakBytes = &u.MemoryPeak
		}
		if u.OOMKills > 0 {
			rc.LimitReached = receipt.LimitMemory
		}
	}
	if res.Enforced.Pids != lifecycle.Unenforced {
		out.PidsLimitHits = &u.PidsLimitHits
		if u.PidsPeak > 0 {
			out.PidsPeak = &u.PidsPeak
		}
	}
	if *out != (receipt.Usage{}) {
		rc.Usage = out
	}
}

// journalledReceipt builds a receipt of handle from the journal's facts
// alone, with the journalled events up to last, and its egress grant, if
// any, with nothing counted. Outcome and limits are left for the caller.
// rec is handle's record as its checkpoint wrote it, which holds every
// fact up to EXECUTING; without it (recovery), or for a later last, the
// record is read from the journal.
func (b *Broker) journalledReceipt(ctx context.Context, handle string, rec *journal.Record, last receipt.EventType) (*receipt.Receipt, error) {
	var err error
	if rec == nil || last > receipt.EventExecuting {
		if rec, err = b.j.Record(ctx, handle); err != nil {
			return nil, err
		}
	}
	revision := rec.GoalRevision
	r := &receipt.Receipt{Format: receipt.Format, ID: journal.NewID("r-"), Action: handle, Session: rec.Session,
		Goal: rec.Goal, GoalRevision: &revision, Step: rec.Step, LeaseID: rec.LeaseID, ApprovalID: rec.ApprovalID,
		Identity: receipt.IdentityOf(&rec.Identity), Fingerprint: hex.EncodeToString(rec.Fingerprint),
		Issued: b.Stamp(b.cfg.Now())}
	if g := rec.Identity.Egress; len(g) > 0 {
		r.Egress = &receipt.Egress{Granted: slices.Clone(g)} // every receipt of an action with a grant says it
	}
	if rec.Parse != nil {
		if r.Contract, err = contractUse(rec); err != nil {
			return nil, err
		}
	}
	r.Events = b.journalledEvents(rec, last)
	return r, nil
}

// contractUse is the receipt's account of the contract grant that
// admitted the action: the grant, the contract and its parse.
func contractUse(rec *journal.Record) (*receipt.ContractUse, error) {
	var p contract.Parse
	if err := wire.DecodeCanonical(rec.Parse, &p); err != nil {
		return nil, fmt.Errorf("decode the contract parse of %s: %w", rec.Handle, err)
	}
	u := &receipt.ContractUse{Grant: rec.LeaseID, Name: p.Contract, Digest: p.Digest, Args: make([]receipt.ContractArg, len(p.Args))}
	for i, a := range p.Args {
		u.Args[i] = receipt.ContractArg{Index: a.Index, Arg: a.Arg, Slot: a.Slot, Kind: a.Kind.String(), Value: a.Value, Path: a.Path}
	}
	return u, nil
}

// journalledEvents returns the receipt events of an action as journalled:
// REQUESTED and APPROVED from its approval request (second precision),
// then its own events up to last. Events the receipt format does not name
// (an operator's classification, SURVIVORS) are left out.
func (b *Broker) journalledEvents(rec *journal.Record, last receipt.EventType) []receipt.Event {
	at := []time.Time{rec.Requested}
	kinds := []receipt.EventType{receipt.EventRequested}
	if rec.Approved != nil {
		at, kinds = append(at, *rec.Approved), append(kinds, receipt.EventApproved)
	}
	for _, e := range rec.Events {
		var t receipt.EventType
		if t.UnmarshalText([]byte(e.Kind)) != nil || t <= kinds[len(kinds)-1] || t > last {
			continue
		}
		at, kinds = append(at, e.At), append(kinds, t)
	}
	events := make([]receipt.Event, len(kinds))
	for i := range kinds {
		events[i] = receipt.Event{Type: kinds[i], At: b.Stamp(at[i])}
		// Journalled times are wall-clock readings; should the wall clock
		// have stepped back between two of them, the later event keeps
		// the earlier one's monotonic reading rather than run backwards.
		if i > 0 && events[i].At.MonoNs < events[i-1].At.MonoNs {
			events[i].At.MonoNs = events[i-1].At.MonoNs
		}
	}
	return events
}

// unexecutedReceipt builds, from the journal alone, the receipt of an
// action that never started (known_not_executed) or whose end the broker
// did not observe (unknown). It claims nothing else: no pid, exit, signal,
// sandbox facts or group-gone evidence, and limits enforced by "none" or
// "unknown".
func (b *Broker) unexecutedReceipt(ctx context.Context, handle string, o wire.Outcome, why *wire.Error) (*receipt.Receipt, error) {
	last, enforced := receipt.EventExecuting, receipt.EnforcedByNone
	if o == wire.OutcomeUnknown {
		last, enforced = receipt.EventUnknownTermination, receipt.EnforcedByUnknown
	}
	r, err := b.journalledReceipt(ctx, handle, nil, last)
	if err != nil {
		return nil, fmt.Errorf("prepare %s receipt of %s: %w", o, handle, err)
	}
	r.Outcome, r.Error = o, &receipt.Refusal{Code: why.Code, Message: why.Message}
	r.Limits = receipt.LimitsOf(r.Identity.Profile, receipt.Uniform(enforced))
	return r, nil
}

// sealUnknownReceipts gives every unknown action without a receipt (left
// in flight by a previous broker, or marked unknown without one) its
// unknown receipt, so the log says where its gap is. A failure is logged
// and retried at the next start.
func (b *Broker) sealUnknownReceipts(ctx context.Context) error {
	todo, err := b.j.UnknownWithoutReceipt(ctx)
	if err != nil {
		return err
	}
	for _, p := range todo {
		r, err := b.unexecutedReceipt(ctx, p.Handle, wire.OutcomeUnknown, p.Why)
		if err == nil {
			_, err = b.SealReceipt(ctx, r)
		}
		if err != nil {
			b.cfg.Logf("action %s: seal its unknown receipt: %v", p.Handle, err)
		}
	}
	return nil
}
