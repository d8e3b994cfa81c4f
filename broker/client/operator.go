package client

import (
	"context"
	"time"

	"warrant/wire"
)

// Approve grants a lease of uses uses, valid for ttl, for a pending
// approval request, under the binding the request shows.
func (cl *Client) Approve(requestID string, uses uint32, ttl time.Duration) (*wire.LeaseView, error) {
	return cl.ApproveBinding(requestID, uses, ttl, 0)
}

// ApproveContext is Approve given up on at once when ctx is done, as an
// interrupted `broker run --approve` is: once the request was sent, the
// error says the broker may have granted it.
func (cl *Client) ApproveContext(ctx context.Context, requestID string, uses uint32, ttl time.Duration) (*wire.LeaseView, error) {
	return cl.approve(ctx, requestID, uses, ttl, 0)
}

// ApproveBinding is Approve with the executable's binding pinned to b
// (0: the request's own).
func (cl *Client) ApproveBinding(requestID string, uses uint32, ttl time.Duration, b wire.Binding) (*wire.LeaseView, error) {
	return cl.approve(context.Background(), requestID, uses, ttl, b)
}

func (cl *Client) approve(ctx context.Context, requestID string, uses uint32, ttl time.Duration, b wire.Binding) (*wire.LeaseView, error) {
	secs := ttl / time.Second
	if secs > 1<<32-1 {
		secs = 1<<32 - 1
	}
	return cl.Grant(ctx, &wire.Approve{RequestID: requestID, Uses: uses, TTLSeconds: uint32(secs), Binding: b})
}

// Grant sends approval m as the operator decided it (its binding pinned,
// its egress list set) and returns the lease; ctx done gives it up, as
// ApproveContext.
func (cl *Client) Grant(ctx context.Context, m *wire.Approve) (*wire.LeaseView, error) {
	r, err := expect[*wire.LeaseGranted](cl.operator.roundTripContext(ctx, m, 0))
	if err != nil {
		return nil, err
	}
	return &r.Lease, nil
}

// EnableContract grants a library contract (m) for a workspace and
// profile, or for a pending approval request's (m.Request), which the
// grant then settles as approved; the grant comes back as a lease naming
// the contract.
func (cl *Client) EnableContract(m *wire.ContractEnable) (*wire.LeaseView, error) {
	r, err := expect[*wire.LeaseGranted](cl.operator.roundTrip(m))
	if err != nil {
		return nil, err
	}
	return &r.Lease, nil
}

// ContractOffer lists the library contracts that would cover approval
// request requestID, the one covering most of the requests a grant for it
// would bind first; none is not an error.
func (cl *Client) ContractOffer(requestID string) ([]wire.ContractOfferItem, error) {
	r, err := expect[*wire.ContractOffers](cl.operator.roundTrip(&wire.ContractOffer{Request: requestID}))
	if err != nil {
		return nil, err
	}
	return r.Offers, nil
}

// Deny refuses a pending approval request.
func (cl *Client) Deny(requestID, reason string) error {
	return cl.DenyContext(context.Background(), requestID, reason)
}

// DenyContext is Deny given up on at once when ctx is done.
func (cl *Client) DenyContext(ctx context.Context, requestID, reason string) error {
	_, err := expect[*wire.OK](cl.operator.roundTripContext(ctx, &wire.Deny{RequestID: requestID, Reason: reason}, 0))
	return err
}

// Revoke ends a lease now.
func (cl *Client) Revoke(leaseID string) error {
	_, err := expect[*wire.OK](cl.operator.roundTrip(&wire.Revoke{LeaseID: leaseID}))
	return err
}

// RevokeContract ends a contract grant now; a lease that is not one is
// refused and stays as it is.
func (cl *Client) RevokeContract(grantID string) error {
	_, err := expect[*wire.OK](cl.operator.roundTrip(&wire.Revoke{LeaseID: grantID, Contract: true}))
	return err
}

// List lists the first page (wire.MaxList entries) of pending approvals,
// leases or actions (unknownOnly: only unclassified unknown outcomes);
// the listing's Truncated says whether more follow (see ListPage).
func (cl *Client) List(kind wire.ListKind, unknownOnly bool) (*wire.Listing, error) {
	return cl.ListPage(wire.List{Kind: kind, UnknownOnly: unknownOnly})
}

// ListPage lists the page q asks for: at most q.Limit entries after the
// entry q.After.
func (cl *Client) ListPage(q wire.List) (*wire.Listing, error) {
	return expect[*wire.Listing](cl.operator.roundTrip(&q))
}

// Resolve records the operator's classification of an unknown outcome.
func (cl *Client) Resolve(handle string, c wire.Classification, note string) error {
	_, err := expect[*wire.OK](cl.operator.roundTrip(&wire.Resolve{Handle: handle, Classification: c, Note: note}))
	return err
}

// SetGoalState pauses, resumes or cancels a goal.
func (cl *Client) SetGoalState(goal string, state wire.GoalState) (*wire.GoalReply, error) {
	return expect[*wire.GoalReply](cl.operator.roundTrip(&wire.GoalSetState{Goal: goal, State: state}))
}

// AttestGoal records the operator's explicit statement about a step of
// a goal under its current revision (the evidence of an operator
// criterion); it is signed into the receipt log as a statement, never as
// a receipt.
func (cl *Client) AttestGoal(goal, step, statement string) (*wire.GoalReply, error) {
	return expect[*wire.GoalReply](cl.operator.roundTrip(&wire.GoalAttest{Goal: goal, Step: step, Statement: statement}))
}
