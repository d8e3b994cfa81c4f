package receipt

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

type edVerifier struct{ pub ed25519.PublicKey }

func (v edVerifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(v.pub, data, sig) {
		return dsse.ErrNoSignature
	}
	return nil
}
func (v edVerifier) KeyID() (string, error)   { return KeyID(v.pub), nil }
func (v edVerifier) Public() crypto.PublicKey { return v.pub }

// Exported envelopes verify with an independent DSSE implementation.
func TestExternalDSSEVerifier(t *testing.T) {
	k := testKeys(t)
	entries, _ := testLog(t, k, 3)
	var buf bytes.Buffer
	if err := ExportDSSEJSONL(&buf, entries); err != nil {
		t.Fatal(err)
	}
	ev, err := dsse.NewEnvelopeVerifier(edVerifier{k.Public()})
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var env dsse.Envelope
		if err := json.Unmarshal(line, &env); err != nil {
			t.Fatal(err)
		}
		if _, err := ev.Verify(context.Background(), &env); err != nil {
			t.Fatalf("envelope %d: %v", i, err)
		}
		bad := env
		payload := []byte(bad.Payload)
		payload[len(payload)/2] ^= 1 // the base64 text of the signed statement
		bad.Payload = string(payload)
		if _, err := ev.Verify(context.Background(), &bad); err == nil {
			t.Fatalf("envelope %d: an edited envelope verified", i)
		}
	}
}
