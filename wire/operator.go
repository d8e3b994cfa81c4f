package wire

import "fmt"

// Approve grants a lease for a pending approval request.
type Approve struct {
	RequestID  string `cbor:"request_id"`
	Uses       uint32 `cbor:"uses"`        // at least 1
	TTLSeconds uint32 `cbor:"ttl_seconds"` // at least 1
	// Binding, when set, pins the executable's binding for this approval
	// (sealed-snapshot or in-place) instead of the default the request
	// shows; the lease is for that identity's fingerprint.
	Binding Binding `cbor:"binding,omitzero"`
	// Egress, when SetEgress, is the exact egress list the lease grants
	// instead of the one the request asked for (none when empty); the
	// lease is for that identity's fingerprint.
	Egress    []string `cbor:"egress,omitempty"`
	SetEgress bool     `cbor:"set_egress,omitempty"`
}

// Deny refuses a pending approval request; nothing reusable remains.
type Deny struct {
	RequestID string `cbor:"request_id"`
	Reason    string `cbor:"reason,omitempty"`
}

// Revoke ends a lease before its expiry. With Contract, the lease must
// be a contract grant (`broker contracts revoke`); a plain lease is
// refused and stays as it is.
type Revoke struct {
	LeaseID  string `cbor:"lease_id"`
	Contract bool   `cbor:"contract,omitempty"`
}

// List asks for one page of approvals, leases or actions, in the
// listing's order (pending approvals oldest first; leases and actions
// newest first).
type List struct {
	Kind        ListKind `cbor:"kind"`
	UnknownOnly bool     `cbor:"unknown_only,omitempty"` // actions whose outcome is unknown
	// Limit is the most entries the page may hold, 1 to MaxList; absent
	// means MaxList.
	Limit uint32 `cbor:"limit,omitzero"`
	// After, when set, starts the page after the entry of this id (an
	// approval or lease id, an action handle): the cursor the previous
	// page's last entry gives. An id the journal does not hold is refused.
	After string `cbor:"after,omitempty"`
}

// PageSize is the page size m asks for.
func (m *List) PageSize() int {
	if m.Limit == 0 {
		return MaxList
	}
	return int(m.Limit)
}

// Resolve records the operator's classification of an unknown outcome. It
// is a statement by the operator, never a process receipt.
type Resolve struct {
	Handle         string         `cbor:"handle"`
	Classification Classification `cbor:"classification"`
	Note           string         `cbor:"note,omitempty"`
}

// GoalSetState pauses, resumes or cancels a goal.
type GoalSetState struct {
	Goal  string    `cbor:"goal"`
	State GoalState `cbor:"state"`
}

// GoalAttest records the operator's explicit statement about one step
// of a goal under its current revision: the evidence an "operator"
// criterion asks for. It is signed into the receipt log as an operator
// statement, never as a receipt.
type GoalAttest struct {
	Goal      string `cbor:"goal"`
	Step      string `cbor:"step"`
	Statement string `cbor:"statement"`
}

// ContractEnable grants the library contract Name (docs/contracts.md)
// for the workspace and profile: the broker resolves its executable as a
// submit of it would be, and answers the grant as a LeaseGranted whose
// lease names the contract. Executable, when set, is the executable the
// grant binds instead of the contract's own (an absolute path such as a
// toolchain's, or a bare name).
//
// Request, when set, names a pending approval request the grant is to
// settle: the grant binds that request's workspace, profile and resolved
// executable (Workspace and Profile may then be left out; when given they
// must agree with it). The file the request runs must be the one the
// contract's executable resolves to in its workspace, outside the
// workspace and its cache, or the very file Executable names; the
// contract must accept its argv in its cwd. In the same transaction the
// request is approved, covered by the grant (its approval_wait answers
// the grant's id as its lease), and so are the oldest other pending
// requests of the workspace the grant admits, up to its uses; the
// LeaseView answered says how many (Settled) and the file the grant binds
// (Program).
type ContractEnable struct {
	Workspace  string  `cbor:"workspace,omitempty"`
	Name       string  `cbor:"name"`
	Uses       uint32  `cbor:"uses"`        // at least 1
	TTLSeconds uint32  `cbor:"ttl_seconds"` // at least 1
	Profile    Profile `cbor:"profile,omitzero"`
	Executable string  `cbor:"executable,omitempty"`
	Request    string  `cbor:"request,omitempty"`
}

func (*ContractEnable) Type() MsgType { return TypeContractEnable }

func (m *ContractEnable) validate() error {
	err := firstErr(checkName("name", m.Name), checkText("executable", m.Executable, maxName), checkText("request", m.Request, maxName))
	if err == nil && (m.Request == "" || m.Workspace != "") {
		err = checkAbs("workspace", m.Workspace)
	}
	if err == nil && (m.Request == "" || m.Profile != 0) {
		err = checkEnum(m.Profile)
	}
	if err == nil && (m.Uses == 0 || m.TTLSeconds == 0) {
		err = fmt.Errorf("contract_enable: uses and ttl_seconds must be at least 1")
	}
	return err
}

// Bounds of a ContractOffers answer: offers, the command lines each
// covers, one such line and a grammar's usage.
const (
	MaxOffers      = 16
	MaxOfferCovers = 16
	MaxCoverLine   = 1024
	MaxUsage       = 32 << 10
)

// ContractOffer asks which library contracts would cover the approval
// request Request: answered by ContractOffers.
type ContractOffer struct {
	Request string `cbor:"request"`
}

func (*ContractOffer) Type() MsgType { return TypeContractOffer }

func (m *ContractOffer) validate() error { return checkName("request", m.Request) }

func (*Approve) Type() MsgType      { return TypeApprove }
func (*Deny) Type() MsgType         { return TypeDeny }
func (*Revoke) Type() MsgType       { return TypeRevoke }
func (*List) Type() MsgType         { return TypeList }
func (*Resolve) Type() MsgType      { return TypeResolve }
func (*GoalSetState) Type() MsgType { return TypeGoalSetState }
func (*GoalAttest) Type() MsgType   { return TypeGoalAttest }

func (m *Approve) validate() error {
	err := checkName("request_id", m.RequestID)
	if err == nil && (m.Uses == 0 || m.TTLSeconds == 0) {
		err = fmt.Errorf("approve: uses and ttl_seconds must be at least 1")
	}
	if err == nil && m.Binding != 0 && m.Binding != SealedSnapshot && m.Binding != InPlace {
		err = fmt.Errorf("approve: binding %s cannot be pinned", m.Binding)
	}
	switch {
	case err != nil:
	case m.SetEgress:
		err = checkEgress("egress", m.Egress)
	case len(m.Egress) > 0:
		err = fmt.Errorf("approve: egress without set_egress (the list replaces the request's only when set_egress says so)")
	}
	return err
}
func (m *Deny) validate() error {
	return firstErr(checkName("request_id", m.RequestID), checkText("reason", m.Reason, maxText))
}
func (m *Revoke) validate() error { return checkName("lease_id", m.LeaseID) }
func (m *List) validate() error {
	err := firstErr(checkEnum(m.Kind), checkText("after", m.After, maxName))
	if err == nil && m.Limit > MaxList {
		err = fmt.Errorf("list: limit %d exceeds the cap of %d", m.Limit, MaxList)
	}
	return err
}
func (m *Resolve) validate() error {
	return firstErr(checkName("handle", m.Handle), checkEnum(m.Classification),
		checkText("note", m.Note, maxText))
}
func (m *GoalSetState) validate() error {
	return firstErr(checkName("goal", m.Goal), checkEnum(m.State))
}
func (m *GoalAttest) validate() error {
	err := firstErr(checkName("goal", m.Goal), checkName("step", m.Step), checkText("statement", m.Statement, maxText))
	if err == nil && m.Statement == "" {
		err = fmt.Errorf("statement: empty")
	}
	return err
}
