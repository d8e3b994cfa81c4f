package identity

import (
	"crypto/sha256"

	"warrant/wire"
)

// Fingerprint is the SHA-256 of the canonical CBOR of the whole command
// identity (docs/architecture.md §2.2). The identity's environment holds the
// allowlisted variables except HOME and TMPDIR, which differ per action,
// so the same command in the same place under the same policy has the same
// fingerprint every time.
func Fingerprint(id *wire.CommandIdentity) ([]byte, error) { return Digest(id) }

// Digest is the SHA-256 of the canonical encoding of v, a value built
// from wire types (an identity, a policy).
func Digest(v any) ([]byte, error) {
	b, err := wire.Canonical(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}
