package receipt

import (
	"fmt"
	"strings"
	"testing"

	"warrant/wire"
)

// TestArtefactsAreCapped: a step's exited action may carry MaxArtefacts
// read-backs; one more is refused, naming the cap.
func TestArtefactsAreCapped(t *testing.T) {
	r := testReceipt("r-art", wire.Exited)
	for i := range MaxArtefacts {
		r.Artefacts = append(r.Artefacts, ReadBack{Path: fmt.Sprintf("out/%d", i), State: FileMissing})
	}
	if err := r.Validate(); err != nil {
		t.Fatalf("%d artefacts: %v", MaxArtefacts, err)
	}
	r.Artefacts = append(r.Artefacts, ReadBack{Path: "out/one-more", State: FileMissing})
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the cap is %d", MaxArtefacts)) {
		t.Fatalf("%d artefacts: %v, want refused at the cap", len(r.Artefacts), err)
	}
}
