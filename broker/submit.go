package broker

import (
	"bytes"
	"context"

	"warrant/broker/internal/admission"
	"warrant/broker/internal/cardtext"
	"warrant/broker/internal/goals"
	"warrant/broker/internal/identity"
	"warrant/broker/internal/journal"
	"warrant/broker/internal/protect"
	"warrant/broker/runner"
	"warrant/wire"
)

// Submit runs the pipeline of docs/architecture.md §2 up to the launch:
// admission → goal active, and the step's dependencies verified when a
// step is named (stepGate: STEP_BLOCKED) → identity (admission.Resolver)
// → alias scan of the workspace and its cache (admission.Scan:
// WORKSPACE_ALIASED before anything is asked) → exact lease match, else
// one the operator granted with the other binding or another egress list
// (matchAmended), else a contract grant's (contracts.go; never for a
// request with egress), else an approval request → snapshot → the egress
// proxy for an identity with egress (withEgress) → EXECUTING checkpoint
// (the lease use is consumed there) →
// Executor.Start, with an observer that turns what it reports into
// evidence (evidence.go); the launcher is told to proceed, and the submit
// answered, once the checkpoint is durable (its fsync runs while the
// launcher confines itself). It answers *wire.Accepted or
// *wire.ApprovalRequired, or a *wire.Error; a repeat of a call id that
// started an action answers that action's *wire.Status
// (admission.Repeated). Unless the capability probe verified this host
// (capability.go) it refuses with SANDBOX_UNAVAILABLE before anything
// else; so it does a request with egress, or a lease with egress it
// matched (withEgress), unless the probe showed that the host enforces
// egress leases (checkEgress). Without an Executor it refuses with
// SANDBOX_UNAVAILABLE before the checkpoint: nothing is consumed and
// nothing is recorded as executed.
func (b *Broker) Submit(ctx context.Context, s *wire.Submit) (wire.Message, error) {
	if err := b.checkCapability(); err != nil {
		return nil, err // before anything: no approval is asked for what cannot run
	}
	if err := identity.Admit(s); err != nil {
		return nil, err
	}
	if len(s.Request.Egress) > 0 {
		if err := b.checkEgress(); err != nil {
			return nil, err // nor for a grant this host cannot enforce
		}
	}
	goalID := s.Request.Goal
	if goalID == "" {
		goalID = journal.DefaultGoal
	}
	call, err := admission.CallOf(s, goalID)
	if err != nil {
		return nil, err
	}
	if reply, err := admission.Repeated(ctx, b.j, b.cfg.Now, call); reply != nil || err != nil {
		return reply, err // what the call id already stands for
	}
	g, err := b.j.Goal(ctx, goalID)
	if err != nil {
		return nil, err
	}
	if g.State != wire.GoalActive {
		return nil, wire.Errorf(wire.CodeGoalInactive, "goal %s is %s; it cannot run actions", g.ID, g.State)
	}
	var step *goals.Step
	if s.Request.Step != "" {
		if step, err = b.stepGate(ctx, g, s.Request.Step); err != nil {
			return nil, err // STEP_BLOCKED or an unknown step: nothing asked, consumed or started
		}
	}
	r, err := b.admit.Resolve(s)
	if err != nil {
		return nil, err
	}
	id := r.Identity()
	launch := &runner.Launch{Resolved: r, MACKey: b.Keys().MACKey()}
	handed := false
	defer func() {
		if !handed {
			launch.Close()
		}
	}()
	// Before anything is asked or consumed: a workspace holding a second
	// name of a file outside its writable scope (the workspace and its
	// cache), or a mount point, is WORKSPACE_ALIASED (aliasscan).
	scanned, err := admission.Scan(r)
	if err != nil {
		return nil, err
	}
	lease, err := b.j.MatchLease(ctx, g, id.Workspace, r.Fingerprint())
	if err == nil && lease == nil {
		// The operator may have pinned the other binding for exactly
		// this action (broker approve --binding): that lease is for the
		// identity under it.
		pinned, fp, perr := r.Rebind(otherBinding(id.Binding))
		if perr != nil {
			return nil, perr
		}
		if lease, err = b.j.MatchLease(ctx, g, id.Workspace, fp); err == nil && lease != nil {
			r = r.WithIdentity(pinned, fp)
			launch.Resolved, id = r, r.Identity()
		}
	}
	if err == nil && lease == nil {
		// Or granted another egress list than the request asked for
		// (broker approve --egress): that lease is for the identity with
		// that list.
		var amended *wire.CommandIdentity
		var fp []byte
		if lease, amended, fp, err = b.matchAmended(ctx, g, r); err == nil && lease != nil {
			r = r.WithIdentity(amended, fp)
			launch.Resolved, id = r, r.Identity()
		}
	}
	if err == nil && lease == nil {
		// No exact lease: a contract grant of the workspace may admit
		// this argv (contracts.go); the fingerprint stays the command's.
		lease, err = b.matchContract(ctx, g, r)
	}
	if err != nil {
		return nil, err
	}
	if lease == nil {
		view, err := b.j.RequestApproval(ctx, g, s.Request.Session, id, r.Fingerprint(), cardtext.Limitations(id, scanned.Files, b.admit.Caches.Dir(id.Workspace), b.protection(), b.resources(id.Profile)), call)
		if err != nil {
			return admission.Raced(ctx, b.j, b.cfg.Now, call, err)
		}
		return &wire.ApprovalRequired{Request: *view}, nil
	}
	if b.cfg.Executor == nil {
		return nil, wire.Errorf(wire.CodeSandboxUnavailable,
			"execution is not wired yet: this broker has no launcher; lease %s matched and was not used", lease.ID())
	}
	if err := b.snapshots(launch); err != nil {
		return nil, err
	}
	if err := b.withEgress(launch, lease.ID()); err != nil {
		return nil, err // before the checkpoint: nothing consumed
	}
	// The protected paths' state before the launch; the observer compares
	// it with their state once the group is gone (protect).
	obs := &observer{b: b, protected: protect.Take(r.Workspace())}
	if by, _ := b.protectedBy(); by == wire.ProtectedByMount && obs.protected != nil {
		launch.Protect = obs.protected.Binds() // bound read-only as well (runner.Launch.Protect)
	}
	if step != nil && len(step.Outputs) > 0 {
		// The step's outputs are read back beneath this very workspace
		// once the action ends (evidence.go).
		if obs.outputs.ws, err = r.HoldWorkspace(); err != nil {
			obs.release()
			return nil, wire.Errorf(wire.CodeIOFailed, "hold the workspace to read the step's outputs back: %v", err)
		}
		obs.outputs.paths = step.Outputs
	}
	if launch.Handle, launch.Durable, err = b.j.Checkpoint(ctx, lease, s.Request.Session, s.Request.Step, id, call); err != nil {
		obs.release()
		return admission.Raced(ctx, b.j, b.cfg.Now, call, err)
	}
	obs.handle, obs.checkpointed = launch.Handle, lease.Checkpointed() // the receipt is built from what the checkpoint wrote
	defer b.notify()
	handle, durable := launch.Handle, launch.Durable // launch is the executor's once handed
	// The launcher confines itself while the checkpoint's fsync runs; it
	// executes, and the submit is answered, only once that returned.
	answer := func() (wire.Message, error) {
		if err := durable(); err != nil {
			return nil, admission.NotDurable(handle, err)
		}
		return &wire.Accepted{Handle: handle, Lease: lease.ID(), UsesLeft: lease.UsesLeft(), Contract: lease.Contract()}, nil
	}
	if launch.Home, launch.Tmp, err = b.adirs.Make(launch.Handle); err == nil && id.GitIdentity != nil {
		err = admission.WriteGitConfig(launch.Home, id.GitIdentity) // the approved identity, whatever the broker read since
	}
	if err != nil {
		obs.release()
		b.notStarted(ctx, launch.Handle, err)
		return answer()
	}
	handed = true
	if err := b.cfg.Executor.Start(ctx, launch, obs); err != nil {
		obs.release()
		b.notStarted(ctx, launch.Handle, err)
	}
	return answer()
}

// otherBinding is the binding an approval may pin instead of b.
func otherBinding(b wire.Binding) wire.Binding {
	if b == wire.InPlace {
		return wire.SealedSnapshot
	}
	return wire.InPlace
}

// matchAmended finds a lease the operator granted the request of r's
// fingerprint with another egress list (journal.AmendedLeases): the
// first whose fingerprint is that of r's identity with the list, under
// its binding or the other one (an approval may pin both). It returns
// the lease, that identity and its fingerprint, or no lease.
func (b *Broker) matchAmended(ctx context.Context, g journal.Goal, r *identity.Resolved) (*journal.Lease, *wire.CommandIdentity, []byte, error) {
	found, err := b.j.AmendedLeases(ctx, g, r.Identity().Workspace, r.Fingerprint())
	if err != nil {
		return nil, nil, nil, err
	}
	for _, a := range found {
		id := *r.Identity()
		id.Egress = a.Egress
		for _, bind := range []wire.Binding{id.Binding, otherBinding(id.Binding)} {
			id.Binding = bind
			fp, err := identity.Fingerprint(&id)
			if err != nil {
				return nil, nil, nil, err
			}
			if bytes.Equal(fp, a.Lease.Fingerprint()) {
				return a.Lease, &id, fp, nil
			}
		}
	}
	return nil, nil, nil, nil
}

// snapshots fills in the sealed snapshots of a sealed-snapshot launch; an
// in-place one executes the installed files and takes none.
func (b *Broker) snapshots(l *runner.Launch) error {
	r := l.Resolved
	id := r.Identity()
	if id.Binding == wire.InPlace {
		return inPlaceBindable(r)
	}
	var err error
	if l.Snapshot, err = b.snaps.Get(r.Exe(), id.Executable.File); err != nil {
		return err
	}
	if in := id.Executable.Interpreter; in != nil {
		l.InterpSnapshot, err = b.snaps.Get(r.Interp(), in.File)
	}
	return err
}

// inPlaceBindable refuses an in-place launch whose bytes nothing would
// bind: the broker holds no read lease on them (another process has the
// file open for writing, or it is not this uid's) and this uid could
// write them.
func inPlaceBindable(r *identity.Resolved) error {
	if r.Leased() {
		return nil
	}
	id := r.Identity()
	f := &id.Executable.File
	if in := id.Executable.Interpreter; in != nil {
		f = &in.File // a script's own bytes are read by path and never bound
	}
	if !identity.Unwritable(f) {
		return wire.Errorf(wire.CodeIdentityDrift, "%s cannot run in place: the broker holds no read lease on it (another process has it open for writing, "+
			"or its filesystem grants no leases), so nothing would bind the bytes that run to the approved digest; close the writer, "+
			"or run a sealed copy: approve it with --binding sealed-snapshot, or list it in <state>/bindings", f.Path)
	}
	return nil
}

// notStarted records a checkpointed action that was never started as
// known_not_executed, with its receipt, in one transaction. Its use stays
// spent: the checkpoint is final. If the receipt cannot be made, the
// outcome alone is recorded; if even that fails, the action stays
// executing and becomes unknown (with an unknown receipt) at the next
// start, which is the honest answer.
func (b *Broker) notStarted(ctx context.Context, handle string, cause error) {
	defer b.removeActionDirs(handle)() // renamed away now, deleted once the end is recorded
	res := &wire.Result{Outcome: wire.KnownNotExecuted, Error: b.asWireError(cause)}
	r, err := b.unexecutedReceipt(ctx, handle, wire.KnownNotExecuted, res.Error)
	if err == nil {
		if _, err = b.finishWithReceipt(ctx, res, r); err == nil {
			return
		}
	}
	b.cfg.Logf("action %s: seal its known_not_executed receipt: %v", handle, err)
	if err := b.j.Finish(ctx, handle, res); err != nil {
		b.cfg.Logf("action %s: record that it was not started: %v", handle, err)
	}
}
