package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"warrant/broker/client"
	"warrant/broker/internal/identity"
	"warrant/broker/internal/journal"
	"warrant/broker/internal/server"
	"warrant/wire"
)

// maxList bounds every listing (the wire's cap).
const maxList = 512

// MaxWait caps the budget of one wait or approval_wait request: a longer
// one is refused with ARGUMENTS_INVALID naming the cap, so that no
// connection is held by one request for longer (a client waits longer in
// turns, as broker/client does in polls of at most 10 s).
const MaxWait = 60 * time.Second

// capWait refuses a wait budget over MaxWait.
func capWait(budgetMs uint32) error {
	if time.Duration(budgetMs)*time.Millisecond <= MaxWait {
		return nil
	}
	return wire.Errorf(wire.CodeArgumentsInvalid, "a wait budget is at most %d ms (%s), not %d ms: wait again to wait longer",
		MaxWait.Milliseconds(), MaxWait, budgetMs)
}

// Serve answers agent.sock and operator.sock in the state directory's
// run/ until ctx is done (broker/internal/server: peer uid checks, frame
// caps and deadlines, bounded connections), dispatching each request to
// HandleAgent or HandleOperator.
func (b *Broker) Serve(ctx context.Context) error {
	agent, operator := client.SocketPaths(b.dirs.Root)
	return server.Serve(ctx, server.Options{AgentPath: agent, OperatorPath: operator,
		Agent: b.HandleAgent, Operator: b.HandleOperator,
		Streams:  map[wire.MsgType]server.StreamHandler{wire.TypeFollow: b.HandleFollow},
		MaxConns: b.cfg.MaxConns, IdleTimeout: b.cfg.IdleTimeout, Logf: b.cfg.Logf})
}

// HandleAgent answers one request from agent.sock: submit, query, wait,
// cancel, goals (create, revise, show, verify, list) and approval_wait
// (follow is HandleFollow's). Errors come back as *wire.Error replies.
func (b *Broker) HandleAgent(ctx context.Context, m wire.Message) wire.Message {
	var reply wire.Message
	var err error
	switch m := m.(type) {
	case *wire.Submit:
		reply, err = b.Submit(ctx, m)
	case *wire.Query:
		reply, err = b.j.Status(ctx, m.Handle)
	case *wire.Wait:
		if err = capWait(m.BudgetMs); err == nil {
			reply, err = b.Wait(ctx, m.Handle, time.Duration(m.BudgetMs)*time.Millisecond)
		}
	case *wire.Cancel:
		reply, err = b.Cancel(ctx, m.Handle, m.Reason)
	case *wire.GoalCreate:
		reply, err = b.createGoal(ctx, m)
	case *wire.GoalRevise:
		reply, err = b.reviseGoal(ctx, m)
	case *wire.GoalShow:
		reply, err = b.showGoal(ctx, m.Goal)
	case *wire.GoalVerify:
		reply, err = b.VerifyGoal(ctx, m.Goal)
	case *wire.GoalList:
		reply, err = b.listGoals(ctx)
	case *wire.ApprovalWait:
		if err = capWait(m.BudgetMs); err == nil {
			reply, err = b.ApprovalWait(ctx, m.RequestID, time.Duration(m.BudgetMs)*time.Millisecond)
		}
	default:
		panic(fmt.Sprintf("broker: internal error: %s on the agent channel", m.Type()))
	}
	return b.answer(reply, err)
}

// HandleOperator answers one request from operator.sock: approve, deny,
// revoke, list, resolve, goal state, the operator's statements about
// goal steps, contract grants (contracts.go) and the contracts offered
// for a request (offers.go). A decision wakes those waiting for it.
func (b *Broker) HandleOperator(ctx context.Context, m wire.Message) wire.Message {
	var reply wire.Message
	var err error
	switch m := m.(type) {
	case *wire.Approve:
		var l *wire.LeaseView
		if err = b.checkApprovalEgress(ctx, m); err != nil {
			break // no lease whose grant this host cannot enforce
		}
		if l, err = b.j.Approve(ctx, m.RequestID, m.Uses, time.Duration(m.TTLSeconds)*time.Second, amendment(m)); err == nil {
			reply = &wire.LeaseGranted{Lease: *l}
			b.notify()
		}
	case *wire.Deny:
		if err = b.j.Deny(ctx, m.RequestID, m.Reason); err == nil {
			reply = &wire.OK{}
			b.notify()
		}
	case *wire.Revoke:
		revoke := b.j.Revoke
		if m.Contract {
			revoke = b.j.RevokeContract // a plain lease is refused
		}
		reply, err = &wire.OK{}, revoke(ctx, m.LeaseID)
	case *wire.List:
		reply, err = b.list(ctx, m)
	case *wire.Resolve:
		reply, err = &wire.OK{}, b.j.Resolve(ctx, m.Handle, m.Classification, m.Note)
	case *wire.GoalSetState:
		g, serr := b.j.SetGoalState(ctx, m.Goal, m.State)
		reply, err = b.goalView(ctx, g, serr)
	case *wire.GoalAttest:
		reply, err = b.attest(ctx, m)
	case *wire.ContractEnable:
		var l *wire.LeaseView
		if l, err = b.enableContract(ctx, m); err == nil {
			reply = &wire.LeaseGranted{Lease: *l}
			b.notify() // the request it settled, if any, is approved
		}
	case *wire.ContractOffer:
		reply, err = b.contractOffers(ctx, m.Request)
	default:
		panic(fmt.Sprintf("broker: internal error: %s on the operator channel", m.Type()))
	}
	return b.answer(reply, err)
}

// amendment is what approval m changes of its request's identity: the
// executable's binding it pins, the egress list it sets (none when
// empty); the lease is for the identity so amended and its fingerprint.
// nil when m changes nothing.
func amendment(m *wire.Approve) journal.Amend {
	if m.Binding == 0 && !m.SetEgress {
		return nil
	}
	return func(id *wire.CommandIdentity) (*wire.CommandIdentity, []byte, error) {
		out := *id
		if m.Binding != 0 {
			out.Binding = m.Binding
		}
		if m.SetEgress {
			out.Egress = slices.Clone(m.Egress)
		}
		fp, err := identity.Fingerprint(&out)
		return &out, fp, err
	}
}

func (b *Broker) answer(reply wire.Message, err error) wire.Message {
	if err != nil {
		return b.asWireError(err)
	}
	return reply
}

func (b *Broker) list(ctx context.Context, m *wire.List) (wire.Message, error) {
	var l wire.Listing
	var n int
	var err error
	size := m.PageSize()
	// One more than the page holds says whether more follow.
	switch m.Kind {
	case wire.ListApprovals:
		var more bool
		l.Approvals, more, err = b.j.Approvals(ctx, m.After, size)
		n = len(l.Approvals)
		if more {
			n = size + 1 // the pending requests go on past the page
		}
	case wire.ListLeases:
		var ids []*wire.CommandIdentity
		l.Leases, err = b.j.Leases(ctx, m.After, size+1, &ids)
		l.Leases, n = cutPage(l.Leases, size)
		b.judgeLeases(l.Leases, ids) // leases.go: the rows are closed
	case wire.ListActions:
		l.Actions, err = b.j.Actions(ctx, m.UnknownOnly, m.After, size+1)
		l.Actions, n = cutPage(l.Actions, size)
	case wire.ListContractGrants:
		l.Leases, err = b.j.ContractGrants(ctx, m.After, size+1)
		l.Leases, n = cutPage(l.Leases, size)
	default:
		panic(fmt.Sprintf("broker: internal error: list kind %d", m.Kind))
	}
	l.Truncated = n > size
	return &l, err
}

// cutPage keeps the first size of s and returns how many there were.
func cutPage[T any](s []T, size int) ([]T, int) { return s[:min(len(s), size)], len(s) }

// Wait answers the action's state once it is terminal or unknown, or
// WaitTimeout (not a failure) when the budget runs out first.
func (b *Broker) Wait(ctx context.Context, handle string, budget time.Duration) (wire.Message, error) {
	var st *wire.Status
	ended, err := b.await(ctx, budget, func() (bool, error) {
		var err error
		st, err = b.j.Status(ctx, handle)
		return err == nil && (st.State == wire.StateTerminal || st.State == wire.StateUnknown), err
	})
	switch {
	case err != nil:
		return nil, err
	case !ended:
		return &wire.WaitTimeout{Handle: handle, State: st.State}, nil
	}
	return st, nil
}

// ApprovalWait answers the state of approval request id once it is no
// longer pending, or pending when the budget runs out first (not a
// failure). A pending request does not depend on who waits for it: it
// lives until it is decided or its TTL runs out (journal.RequestTTL),
// whoever submitted it and however often they come back. A denial it
// answers is reported (journal.Decision). Nothing is written when the
// TTL runs out, so the wait ends then at the latest, and answers the
// request expired.
func (b *Broker) ApprovalWait(ctx context.Context, id string, budget time.Duration) (wire.Message, error) {
	v, err := b.j.Request(ctx, id)
	if err != nil {
		return nil, err
	}
	budget = min(budget, max(time.Unix(v.CreatedUnix, 0).Add(journal.RequestTTL).Sub(b.cfg.Now()), 0))
	var d *wire.ApprovalState
	_, err = b.await(ctx, budget, func() (bool, error) {
		var err error
		d, err = b.j.Decision(ctx, id)
		return err != nil || d.State != wire.RequestPending, err
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Cancel asks the executor to end an action in flight. Cancel is not stop
// and stop is not rollback: nothing is deleted or undone.
func (b *Broker) Cancel(ctx context.Context, handle, reason string) (wire.Message, error) {
	st, err := b.j.Status(ctx, handle)
	if err != nil {
		return nil, err
	}
	res := wire.CancelUnknown
	switch {
	case st.State == wire.StateTerminal:
		res = wire.CancelAlreadyTerminal
	case st.State == wire.StateUnknown:
		res = wire.CancelUnknown
	case b.cfg.Executor != nil:
		res = b.cfg.Executor.Cancel(handle, reason)
	}
	return &wire.CancelReply{Handle: handle, Result: res}, nil
}
