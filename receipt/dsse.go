package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
)

// Envelope is a DSSE envelope (secure-systems-lab/dsse, envelope.md) with
// the payload and signatures in standard, padded base64.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one DSSE signature.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// PAE is DSSE's pre-authentication encoding, the bytes that are signed:
//
//	"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
//
// with lengths in ASCII decimal. The type and the body's length are bound
// into the signature, so neither can be swapped or extended.
func PAE(payloadType string, body []byte) []byte {
	out := make([]byte, 0, 32+len(payloadType)+len(body))
	out = append(out, "DSSEv1 "...)
	out = strconv.AppendInt(out, int64(len(payloadType)), 10)
	out = append(out, ' ')
	out = append(out, payloadType...)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, ' ')
	return append(out, body...)
}

// seal signs payload and returns the canonical envelope bytes.
func (k *Keys) seal(payloadType string, payload []byte) []byte {
	env := Envelope{
		PayloadType: payloadType,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures: []Signature{{KeyID: k.KeyID(),
			Sig: base64.StdEncoding.EncodeToString(ed25519.Sign(k.priv, PAE(payloadType, payload)))}},
	}
	b, err := json.Marshal(env)
	if err != nil {
		panic("receipt: internal error: encode envelope: " + err.Error())
	}
	return b
}

// openEnvelope strictly decodes a canonical single-signature envelope and
// checks its signature under pub. It returns the payload, and on failure
// the kind of problem: a malformed envelope, a signature by another key
// (re-signed), or a signature that does not verify (edited).
func openEnvelope(b []byte, pub ed25519.PublicKey) ([]byte, ProblemKind, error) {
	var env Envelope
	if err := strictJSON(b, &env); err != nil {
		return nil, ProblemMalformed, fmt.Errorf("decode envelope: %w", err)
	}
	if again, _ := json.Marshal(env); !bytes.Equal(again, b) {
		return nil, ProblemMalformed, fmt.Errorf("decode envelope: not in canonical form")
	}
	if env.PayloadType != PayloadType || len(env.Signatures) != 1 {
		return nil, ProblemMalformed, fmt.Errorf("decode envelope: payload type %q with %d signatures",
			env.PayloadType, len(env.Signatures))
	}
	payload, err := base64.StdEncoding.Strict().DecodeString(env.Payload)
	if err != nil {
		return nil, ProblemMalformed, fmt.Errorf("decode envelope payload: %w", err)
	}
	s := env.Signatures[0]
	sig, err := base64.StdEncoding.Strict().DecodeString(s.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, ProblemMalformed, fmt.Errorf("decode envelope signature: malformed")
	}
	if s.KeyID != KeyID(pub) {
		return nil, ProblemForeignKey, fmt.Errorf("signed by key %.16s…, not this broker's %.16s…", s.KeyID, KeyID(pub))
	}
	if !ed25519.Verify(pub, PAE(env.PayloadType, payload), sig) {
		return nil, ProblemBadSignature, fmt.Errorf("signature does not verify")
	}
	return payload, 0, nil
}
