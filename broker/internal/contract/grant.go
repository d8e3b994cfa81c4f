package contract

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"warrant/wire"
)

// Grant is the envelope a human approves around a contract, lease-like:
// the broker fills it when the operator enables a contract, never the
// contract file. A submit with no exact lease matches a Grant when its
// identity has the Grant's Base, its goal and revision are the Grant's,
// the Grant is neither expired, exhausted nor revoked, and the
// contract (by Digest) accepts the argv; a match consumes one use as a
// lease use is consumed.
type Grant struct {
	ID       string `json:"id" cbor:"id"`
	Contract string `json:"contract" cbor:"contract"` // the contract's name
	Digest   string `json:"digest" cbor:"digest"`     // the Digest approved
	// Base is BaseFingerprint of the identity the grant binds: the
	// executable as resolved at enable time (requested name, symlink
	// chain, file and interpreter), workspace, profile, environment,
	// policy and binding — everything but the argv and the cwd.
	Base        []byte           `json:"base" cbor:"base"`
	Executable  wire.Executable  `json:"executable" cbor:"executable"` // for listings; Base binds it
	Workspace   wire.DirIdentity `json:"workspace" cbor:"workspace"`
	Profile     wire.Profile     `json:"profile" cbor:"profile"`
	Goal        string           `json:"goal,omitempty" cbor:"goal,omitempty"`
	Revision    uint64           `json:"revision,omitempty" cbor:"revision,omitempty"`
	Uses        uint32           `json:"uses" cbor:"uses"` // left
	ExpiresUnix int64            `json:"expires_unix" cbor:"expires_unix"`
}

// BaseFingerprint is the SHA-256 of the canonical encoding of id with
// its argv and cwd left out: what stays the same across every command
// one contract covers. The fingerprint of each concrete command is
// unchanged (identity.Fingerprint over the whole identity).
func BaseFingerprint(id *wire.CommandIdentity) ([]byte, error) {
	base := *id
	base.Argv, base.Cwd = nil, wire.DirIdentity{}
	b, err := wire.Canonical(&base)
	if err != nil {
		return nil, fmt.Errorf("base fingerprint: %w", err)
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}

// Binds reports whether id is one the grant binds: the same base.
func (g *Grant) Binds(id *wire.CommandIdentity) (bool, error) {
	b, err := BaseFingerprint(id)
	if err != nil {
		return false, err
	}
	return len(g.Base) == sha256.Size && bytes.Equal(b, g.Base), nil
}
