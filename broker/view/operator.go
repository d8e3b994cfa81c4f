package view

import (
	"encoding/hex"
	"time"

	"warrant/wire"
)

// The operator's objects under the JSON convention (docs/json.md): what
// `broker approvals`, `approve`, `leases` and `actions` print. They are
// made from the wire's views and never are the wire's structs themselves,
// whose encoding is CBOR's.

// Approval is an approval request: the whole identity the approval
// binds, its fingerprint, the limitations text, and its state.
type Approval struct {
	ID           string   `json:"id"`
	Goal         string   `json:"goal"`
	GoalRevision uint64   `json:"goal_revision"`
	Session      *string  `json:"session"`
	Identity     Identity `json:"identity"`
	Fingerprint  string   `json:"fingerprint"`
	Limitations  string   `json:"limitations"`
	Created      string   `json:"created"`
	State        string   `json:"state"`  // pending, approved, denied or expired
	Reason       *string  `json:"reason"` // a denial's or an expiry's; null when none
}

// ApprovalOf is the view of a.
func ApprovalOf(a *wire.ApprovalView) Approval {
	return Approval{ID: a.ID, Goal: a.Goal, GoalRevision: a.GoalRevision, Session: Text(a.Session),
		Identity: IdentityOf(&a.Identity), Fingerprint: hex.EncodeToString(a.Fingerprint),
		Limitations: a.Limitations, Created: UnixTime(a.CreatedUnix), State: a.State.String(), Reason: Text(a.Reason)}
}

// Lease is a lease as the operator sees it, with its state at the time
// of listing: usable, will_not_match (usable but granted under another
// policy or environment: WillNotMatch says which), revoked, expired or
// used_up.
type Lease struct {
	ID           string `json:"id"`
	ApprovalID   string `json:"approval_id"`
	Goal         string `json:"goal"`
	GoalRevision uint64 `json:"goal_revision"`
	Fingerprint  string `json:"fingerprint"`
	Expires      string `json:"expires"`
	UsesLeft     uint32 `json:"uses_left"`
	Revoked      bool   `json:"revoked"`
	State        string `json:"state"`
	// Executable, Argv and ArgvTruncated are the command the lease
	// allows, argv as a listing carries it (wire.ListedArgv).
	Executable    string   `json:"executable"`
	Argv          []string `json:"argv"`
	ArgvTruncated bool     `json:"argv_truncated"`
	// Profile is the profile the lease's identity binds, or null.
	Profile *string `json:"profile"`
	// Egress is the exact list of "host:port" entries the lease grants:
	// its request's, or the list the operator approved instead
	// (`broker approve --egress`); empty, no network at all.
	Egress []string `json:"egress"`
	// WillNotMatch says why the lease can never match on the broker that
	// listed it ("granted under policy sha256 … (what differs), will not
	// match"); null when it may.
	WillNotMatch *string `json:"will_not_match"`
}

// LeaseOf is the view of l at now.
func LeaseOf(l *wire.LeaseView, now time.Time) Lease {
	state := "usable"
	switch {
	case l.Revoked:
		state = "revoked"
	case l.ExpiresUnix <= now.Unix():
		state = "expired"
	case l.UsesLeft == 0:
		state = "used_up"
	case l.WillNotMatch != "":
		state = "will_not_match"
	}
	return Lease{ID: l.ID, ApprovalID: l.ApprovalID, Goal: l.Goal, GoalRevision: l.GoalRevision,
		Fingerprint: hex.EncodeToString(l.Fingerprint), Expires: UnixTime(l.ExpiresUnix), UsesLeft: l.UsesLeft,
		Revoked: l.Revoked, State: state, Executable: l.Executable, Argv: NonNil(l.Argv), ArgvTruncated: l.ArgvTruncated,
		Profile: optionalProfile(l.Profile), Egress: NonNil(l.Egress), WillNotMatch: Text(l.WillNotMatch)}
}

// ActionEntry is one action of `broker actions`; its outcome is null until
// the action ends.
type ActionEntry struct {
	Handle      string  `json:"handle"`
	Session     *string `json:"session"`
	Goal        *string `json:"goal"`
	Executable  string  `json:"executable"`
	Fingerprint string  `json:"fingerprint"`
	State       string  `json:"state"`
	Outcome     *string `json:"outcome"`
	// ExitCode and Signal are how the action ended: null while it has
	// not, or when it ended otherwise.
	ExitCode *int32 `json:"exit_code"`
	Signal   *uint8 `json:"signal"`
	Created  string `json:"created"`
	// Argv and ArgvTruncated are argv as a listing carries it
	// (wire.ListedArgv).
	Argv          []string `json:"argv"`
	ArgvTruncated bool     `json:"argv_truncated"`
}

// ActionEntryOf is the view of a.
func ActionEntryOf(a *wire.ActionView) ActionEntry {
	v := ActionEntry{Handle: a.Handle, Session: Text(a.Session), Goal: Text(a.Goal), Executable: a.Executable,
		Fingerprint: hex.EncodeToString(a.Fingerprint), State: a.State.String(), Created: UnixTime(a.CreatedUnix),
		ExitCode: a.ExitCode, Signal: optional(a.Signal), Argv: NonNil(a.Argv), ArgvTruncated: a.ArgvTruncated}
	if a.Outcome != 0 {
		v.Outcome = Text(a.Outcome.String())
	}
	return v
}

// optionalProfile is p's name, or null when unset.
func optionalProfile(p wire.Profile) *string {
	if p == 0 {
		return nil
	}
	return Text(p.String())
}
