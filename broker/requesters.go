package broker

import (
	"context"
	"sync"
	"time"

	"warrant/broker/internal/server"
	"warrant/wire"
)

// Why a pending approval request expires (docs/architecture.md §2.3): a
// request lives only while someone waits for its decision.
const (
	reasonRequesterGone = "its requester went away"
	reasonBrokerStopped = "the broker stopped while it was pending"
)

// requesters are the connections waiting for the decision of each pending
// approval request: those that submitted it (Submit answered
// ApprovalRequired on them) or waited on it (ApprovalWait). When the last
// of them ends while the request is still pending, the request expires:
// no one is left to act on its decision, so it must not stay approvable.
// An in-process caller has no connection and is not tracked.
type requesters struct {
	mu   sync.Mutex
	byID map[string]map[*server.Conn]func() // request id → requester → stop watching it
}

// hold records the connection of ctx as a requester of request id.
func (b *Broker) hold(ctx context.Context, id string) {
	c := server.ConnOf(ctx)
	if c == nil {
		return
	}
	b.reqs.mu.Lock()
	defer b.reqs.mu.Unlock()
	if b.reqs.byID == nil {
		b.reqs.byID = map[string]map[*server.Conn]func(){}
	}
	set := b.reqs.byID[id]
	if set == nil {
		set = map[*server.Conn]func(){}
		b.reqs.byID[id] = set
	}
	if _, ok := set[c]; !ok {
		set[c] = c.Watch(func(shutdown bool) { b.requesterGone(id, c, shutdown) })
	}
}

// requesterGone expires request id when c was its last requester.
func (b *Broker) requesterGone(id string, c *server.Conn, shutdown bool) {
	b.reqs.mu.Lock()
	set := b.reqs.byID[id]
	delete(set, c)
	last := len(set) == 0
	if last {
		delete(b.reqs.byID, id)
	}
	b.reqs.mu.Unlock()
	if !last {
		return
	}
	reason := reasonRequesterGone
	if shutdown {
		reason = reasonBrokerStopped
	}
	expired, err := b.j.Expire(context.Background(), id, reason)
	switch {
	case err != nil:
		b.cfg.Logf("approval request %s: expire it (%s): %v", id, reason, err)
	case expired:
		b.cfg.Logf("approval request %s expired: %s", id, reason)
		b.notify()
	}
}

// decided stops watching the requesters of request id, which is no
// longer pending.
func (b *Broker) decided(id string) {
	b.reqs.mu.Lock()
	set := b.reqs.byID[id]
	delete(b.reqs.byID, id)
	b.reqs.mu.Unlock()
	for _, stop := range set {
		stop()
	}
}

// ApprovalWait answers the state of approval request id once it is no
// longer pending, or pending when the budget runs out first (not a
// failure). Its caller becomes a requester of it (hold); a denial it
// answers is reported (journal.Decision).
func (b *Broker) ApprovalWait(ctx context.Context, id string, budget time.Duration) (wire.Message, error) {
	var d *wire.ApprovalState
	_, err := b.await(ctx, budget, func() (bool, error) {
		var err error
		if d, err = b.j.Decision(ctx, id); err != nil || d.State != wire.RequestPending {
			return true, err
		}
		b.hold(ctx, id)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if d.State != wire.RequestPending {
		b.decided(id)
	}
	return d, nil
}
