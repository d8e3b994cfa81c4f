package wire

import "warrant/internal/closed"

// Outcome is how an action ended (docs/architecture.md §2.6). It is decided from
// facts the broker observed, never from the target's output.
type Outcome uint8

// The outcomes.
const (
	KnownNotExecuted Outcome = iota + 1
	SpawnFailed
	Exited
	Signaled
	TimedOutReaped
	CancelledReaped
	OutputLimitReaped
	OutcomeUnknown
)

var outcomeNames = []string{"", "known_not_executed", "spawn_failed", "exited",
	"signaled", "timed_out_reaped", "cancelled_reaped", "output_limit_reaped", "unknown"}

func (o Outcome) names() []string                  { return outcomeNames }
func (o Outcome) String() string                   { return closed.String(outcomeNames, o) }
func (o Outcome) MarshalText() ([]byte, error)     { return closed.Marshal(outcomeNames, o) }
func (o *Outcome) UnmarshalText(text []byte) error { return closed.Unmarshal(outcomeNames, text, o) }

// Profile names one of the fixed resource bundles (docs/architecture.md §3.4).
// There are no free-form limits anywhere on the wire.
type Profile uint8

// The profiles.
const (
	ProfileShort Profile = iota + 1
	ProfileStandard
	ProfileLong
)

var profileNames = []string{"", "short", "standard", "long"}

func (p Profile) names() []string                  { return profileNames }
func (p Profile) String() string                   { return closed.String(profileNames, p) }
func (p Profile) MarshalText() ([]byte, error)     { return closed.Marshal(profileNames, p) }
func (p *Profile) UnmarshalText(text []byte) error { return closed.Unmarshal(profileNames, text, p) }

// CapabilityState says whether this host has been shown to enforce the
// required policy (docs/architecture.md §2.5).
type CapabilityState uint8

// The capability states.
const (
	Unverified CapabilityState = iota + 1
	Verified
	Unavailable
)

var capabilityNames = []string{"", "unverified", "verified", "unavailable"}

func (c CapabilityState) names() []string              { return capabilityNames }
func (c CapabilityState) String() string               { return closed.String(capabilityNames, c) }
func (c CapabilityState) MarshalText() ([]byte, error) { return closed.Marshal(capabilityNames, c) }
func (c *CapabilityState) UnmarshalText(text []byte) error {
	return closed.Unmarshal(capabilityNames, text, c)
}

// Binding says how the executed bytes were bound to the approved digest.
type Binding uint8

// The binding modes.
const (
	// SealedSnapshot: the kernel executed a sealed memfd whose SHA-256 the
	// launcher measured equal to the approved digest.
	SealedSnapshot Binding = iota + 1
	// Unbound: the platform cannot execute from a descriptor (macOS); the
	// file was hashed by fd just before exec, by path.
	Unbound
	// InPlace: the kernel executed the installed file itself, through the
	// descriptor whose identity the launcher verified, so the program's
	// own location (/proc/self/exe, $ORIGIN) is its real path. Its bytes
	// are bound by BoundBy: the file cannot be modified by the broker's
	// uid, or a witness (its identity unchanged before hashing, at the
	// launcher's check and after the exec; the kernel denies writes while
	// it runs).
	InPlace
	// Broken: an in-place binding whose witness failed after the exec:
	// what was executed is not known. Only receipts say it.
	Broken
)

var bindingNames = []string{"", "sealed-snapshot", "unbound", "in-place", "broken"}

func (b Binding) names() []string                  { return bindingNames }
func (b Binding) String() string                   { return closed.String(bindingNames, b) }
func (b Binding) MarshalText() ([]byte, error)     { return closed.Marshal(bindingNames, b) }
func (b *Binding) UnmarshalText(text []byte) error { return closed.Unmarshal(bindingNames, text, b) }

// BoundBy says what binds an in-place executable's bytes.
type BoundBy uint8

// The in-place bounds.
const (
	// Unwritable: the file is owned by another uid and writable by no one
	// but its owner, and the launcher does not run as root: the broker's
	// uid, and so every target, cannot change it.
	Unwritable BoundBy = iota + 1
	// Witness: the file's identity (inode, size, mtime, ctime) was equal
	// when the broker hashed it, at the launcher's check and after the
	// exec; a change in between is detected, not prevented.
	Witness
)

var boundByNames = []string{"", "unwritable", "witness"}

func (b BoundBy) names() []string                  { return boundByNames }
func (b BoundBy) String() string                   { return closed.String(boundByNames, b) }
func (b BoundBy) MarshalText() ([]byte, error)     { return closed.Marshal(boundByNames, b) }
func (b *BoundBy) UnmarshalText(text []byte) error { return closed.Unmarshal(boundByNames, text, b) }

// ActionState is what query and wait report about a handle.
type ActionState uint8

// The action states.
const (
	StateAccepted ActionState = iota + 1
	StateRunning
	StateTerminal
	StateUnknown
)

var actionStateNames = []string{"", "accepted", "running", "terminal", "unknown"}

func (s ActionState) names() []string              { return actionStateNames }
func (s ActionState) String() string               { return closed.String(actionStateNames, s) }
func (s ActionState) MarshalText() ([]byte, error) { return closed.Marshal(actionStateNames, s) }
func (s *ActionState) UnmarshalText(text []byte) error {
	return closed.Unmarshal(actionStateNames, text, s)
}

// CancelResult answers a cancel request. Cancel is not stop and stop is not
// rollback: nothing is deleted or undone.
type CancelResult uint8

// The cancel results.
const (
	CancelAccepted CancelResult = iota + 1
	CancelRejected
	CancelAlreadyTerminal
	CancelUnknown
)

var cancelResultNames = []string{"", "accepted", "rejected", "already_terminal", "unknown"}

func (c CancelResult) names() []string              { return cancelResultNames }
func (c CancelResult) String() string               { return closed.String(cancelResultNames, c) }
func (c CancelResult) MarshalText() ([]byte, error) { return closed.Marshal(cancelResultNames, c) }
func (c *CancelResult) UnmarshalText(text []byte) error {
	return closed.Unmarshal(cancelResultNames, text, c)
}

// Classification is the operator's statement about an unknown outcome
// (docs/architecture.md §2.7). It is recorded as a statement, never as a receipt.
type Classification uint8

// The classifications.
const (
	ClassSuccess Classification = iota + 1
	ClassFailed
	ClassStop
)

var classificationNames = []string{"", "success", "failed", "stop"}

func (c Classification) names() []string              { return classificationNames }
func (c Classification) String() string               { return closed.String(classificationNames, c) }
func (c Classification) MarshalText() ([]byte, error) { return closed.Marshal(classificationNames, c) }
func (c *Classification) UnmarshalText(text []byte) error {
	return closed.Unmarshal(classificationNames, text, c)
}

// RequestState is the state of an approval request (docs/architecture.md
// §2.3): pending until the operator approves or denies it (or enables a
// contract that covers it), or until it expires at its TTL.
type RequestState uint8

// The request states.
const (
	RequestPending RequestState = iota + 1
	RequestApproved
	RequestDenied
	RequestExpired
)

var requestStateNames = []string{"", "pending", "approved", "denied", "expired"}

func (s RequestState) names() []string              { return requestStateNames }
func (s RequestState) String() string               { return closed.String(requestStateNames, s) }
func (s RequestState) MarshalText() ([]byte, error) { return closed.Marshal(requestStateNames, s) }
func (s *RequestState) UnmarshalText(text []byte) error {
	return closed.Unmarshal(requestStateNames, text, s)
}

// ListKind selects what an operator List request lists.
type ListKind uint8

// The list kinds.
const (
	ListApprovals ListKind = iota + 1
	ListLeases
	ListActions
	ListContractGrants // the operator's contract grants (broker contracts list)
)

var listKindNames = []string{"", "approvals", "leases", "actions", "contract_grants"}

func (k ListKind) names() []string                  { return listKindNames }
func (k ListKind) String() string                   { return closed.String(listKindNames, k) }
func (k ListKind) MarshalText() ([]byte, error)     { return closed.Marshal(listKindNames, k) }
func (k *ListKind) UnmarshalText(text []byte) error { return closed.Unmarshal(listKindNames, text, k) }

// OutputStream names one output stream of an action in an OutputChunk.
type OutputStream uint8

// The output streams.
const (
	Stdout OutputStream = iota + 1
	Stderr
)

var outputStreamNames = []string{"", "stdout", "stderr"}

func (s OutputStream) names() []string              { return outputStreamNames }
func (s OutputStream) String() string               { return closed.String(outputStreamNames, s) }
func (s OutputStream) MarshalText() ([]byte, error) { return closed.Marshal(outputStreamNames, s) }
func (s *OutputStream) UnmarshalText(text []byte) error {
	return closed.Unmarshal(outputStreamNames, text, s)
}

// GoalState is the lifecycle state of a goal. Only an active goal can have
// its leases used.
type GoalState uint8

// The goal states.
const (
	GoalActive GoalState = iota + 1
	GoalPaused
	GoalCancelled
)

var goalStateNames = []string{"", "active", "paused", "cancelled"}

func (g GoalState) names() []string              { return goalStateNames }
func (g GoalState) String() string               { return closed.String(goalStateNames, g) }
func (g GoalState) MarshalText() ([]byte, error) { return closed.Marshal(goalStateNames, g) }
func (g *GoalState) UnmarshalText(text []byte) error {
	return closed.Unmarshal(goalStateNames, text, g)
}
