package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The in-toto framing. A receipt is an in-toto Statement v1 whose subject
// is the executable (by SHA-256) and whose predicate is the receipt; a
// deletion record is a Statement about the receipts whose bodies it
// deleted, and a survivors record one about the unknown receipt of the
// action whose survivors it ended; a verdict and an operator statement
// are Statements about a goal's revision (goals.go). All travel in DSSE
// envelopes of PayloadType.
const (
	PayloadType        = "application/vnd.in-toto+json"
	StatementType      = "https://in-toto.io/Statement/v1"
	ReceiptPredicate   = "https://warrant.invalid/attestations/command-receipt/v1"
	DeletionPredicate  = "https://warrant.invalid/attestations/output-deletion/v1"
	SurvivorsPredicate = "https://warrant.invalid/attestations/survivors-ended/v1"
	VerdictPredicate   = "https://warrant.invalid/attestations/goal-verdict/v1"
	StatementPredicate = "https://warrant.invalid/attestations/operator-statement/v1"
)

// Subject is one in-toto subject.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Statement is an in-toto Statement v1.
type Statement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

func statement(predicateType string, subjects []Subject, predicate []byte) []byte {
	b, err := json.Marshal(Statement{Type: StatementType, Subject: subjects,
		PredicateType: predicateType, Predicate: predicate})
	if err != nil {
		panic("receipt: internal error: encode statement: " + err.Error())
	}
	return b
}

// decodeStatement strictly decodes a canonical statement.
func decodeStatement(b []byte) (*Statement, error) {
	var st Statement
	if err := strictJSON(b, &st); err != nil {
		return nil, fmt.Errorf("decode statement: %w", err)
	}
	if st.Type != StatementType || len(st.Subject) == 0 {
		return nil, fmt.Errorf("decode statement: %w: type %q with %d subjects", ErrInvalid, st.Type, len(st.Subject))
	}
	if again, _ := json.Marshal(st); !bytes.Equal(again, b) {
		return nil, fmt.Errorf("decode statement: %w: not in canonical form", ErrInvalid)
	}
	return &st, nil
}

// receiptSubjects names what ran: the executable and, for a script, its
// interpreter, each by the SHA-256 that was approved.
func receiptSubjects(r *Receipt) []Subject {
	s := []Subject{{Name: r.Identity.Executable.Path, Digest: map[string]string{"sha256": r.Identity.Executable.SHA256}}}
	if in := r.Identity.Interpreter; in != nil {
		s = append(s, Subject{Name: in.File.Path, Digest: map[string]string{"sha256": in.File.SHA256}})
	}
	return s
}
