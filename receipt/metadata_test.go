package receipt

import (
	"strings"
	"testing"

	"warrant/wire"
)

// TestMetadataCostIsOptional: the broker's cost of answering metadata
// calls (brokerCpuNs, heldNs) is an optional part of metadata. A receipt
// without it encodes exactly as receipts did before it existed, so those
// still decode and validate; one with it decodes back to the same bytes.
func TestMetadataCostIsOptional(t *testing.T) {
	old := testReceipt("r1", wire.Exited)
	old.Metadata = &Metadata{Performed: 2, Refused: 1}
	b, err := old.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"metadata":{"performed":2,"refused":1}`) {
		t.Fatalf("metadata without its cost does not encode as before:\n%s", b)
	}
	if _, err := DecodeReceipt(b); err != nil {
		t.Fatalf("a receipt without the cost does not decode: %v", err)
	}
	withCost := testReceipt("r2", wire.Exited)
	withCost.Metadata = &Metadata{Performed: 2, BrokerCPUNs: 35_000, HeldNs: 1_000_000}
	b, err = withCost.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeReceipt(b)
	if err != nil {
		t.Fatal(err)
	}
	if *back.Metadata != *withCost.Metadata {
		t.Fatalf("decoded %+v, want %+v", *back.Metadata, *withCost.Metadata)
	}
	if again, _ := back.Encode(); string(again) != string(b) {
		t.Fatal("re-encoding differs")
	}
}
