package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// DeletionFormat names the deletion record's predicate shape.
const DeletionFormat = "output-deletion.v1"

// DeletionNote is written into every deletion record. Verify can prove
// that bodies were deleted by a signed, chained policy decision; it
// cannot prove that no copy of the bytes survives anywhere (backups,
// free disk blocks, a terminal's scrollback).
const DeletionNote = "retained output bodies deleted by retention policy; digests and counters remain in the receipts; this records deletion by policy, not physical erasure"

// DeletedBody names one receipt whose body was deleted.
type DeletedBody struct {
	Index         int64  `json:"index"`
	ReceiptID     string `json:"receiptId"`
	ReceiptDigest string `json:"receiptDigest"` // chain digest of the receipt's statement
}

// Deletion is the output-deletion.v1 predicate: a signed, chained record
// of which retained bodies retention deleted, when, and under what policy.
type Deletion struct {
	Format   string        `json:"format"`
	Policy   string        `json:"policy"`
	At       Time          `json:"at"`
	Note     string        `json:"note"`
	Bodies   []DeletedBody `json:"bodies"`
	LogIndex int64         `json:"logIndex"`
	Previous string        `json:"previousReceiptDigest,omitempty"`
}

func (d *Deletion) validate() error {
	if d.Format != DeletionFormat || d.Note != DeletionNote || d.Policy == "" || len(d.Bodies) == 0 {
		return errorf("deletion record: format, note, policy and bodies are required")
	}
	for _, b := range d.Bodies {
		if err := checkHex("receiptDigest", b.ReceiptDigest); err != nil {
			return err
		}
	}
	if d.Previous != "" {
		return checkHex("previousReceiptDigest", d.Previous)
	}
	return nil
}

func decodeDeletion(b []byte) (*Deletion, error) {
	var d Deletion
	if err := strictJSON(b, &d); err != nil {
		return nil, fmt.Errorf("decode deletion record: %w", err)
	}
	if err := d.validate(); err != nil {
		return nil, fmt.Errorf("decode deletion record: %w", err)
	}
	if again, _ := json.Marshal(&d); !bytes.Equal(again, b) {
		return nil, fmt.Errorf("decode deletion record: %w: not in canonical form", ErrInvalid)
	}
	return &d, nil
}

// Prune selects the receipts in entries whose body is still stored and
// whose Issued wall time is before cutoff, and appends a signed deletion
// record naming them. The caller then deletes those bodies (sets them to
// nil in its store) and stores the returned record, in one transaction.
// With nothing to prune it returns ok == false and appends nothing.
func (c *Chain) Prune(entries []Entry, cutoff time.Time, policy string, now Time) (record Entry, pruned []int64, ok bool, err error) {
	if int64(len(entries)) != c.n {
		return Entry{}, nil, false, fmt.Errorf("prune: %d entries given, the log holds %d", len(entries), c.n)
	}
	d := Deletion{Format: DeletionFormat, Policy: policy, At: now, Note: DeletionNote, LogIndex: c.n, Previous: c.prev}
	for i, e := range entries {
		if e.Body == nil {
			continue
		}
		ch := checkEntry(e.Envelope, c.keys.Public())
		if ch.err != nil {
			return Entry{}, nil, false, fmt.Errorf("prune: entry %d: %w", i, ch.err)
		}
		if ch.receipt == nil || ch.receipt.Issued.WallUnixNs >= cutoff.UnixNano() {
			continue
		}
		d.Bodies = append(d.Bodies, DeletedBody{Index: int64(i), ReceiptID: ch.receipt.ID, ReceiptDigest: ch.payload})
		pruned = append(pruned, int64(i))
	}
	if len(d.Bodies) == 0 {
		return Entry{}, nil, false, nil
	}
	if err := d.validate(); err != nil {
		return Entry{}, nil, false, fmt.Errorf("prune: %w", err)
	}
	pred, err := json.Marshal(&d)
	if err != nil {
		panic("receipt: internal error: encode deletion record: " + err.Error())
	}
	record, err = c.append(statement(DeletionPredicate, deletionSubjects(&d), pred), nil)
	if err != nil {
		return Entry{}, nil, false, err
	}
	return record, pruned, true, nil
}

// deletionSubjects names the receipts whose bodies a deletion record
// deleted.
func deletionSubjects(d *Deletion) []Subject {
	subjects := make([]Subject, len(d.Bodies))
	for i, b := range d.Bodies {
		subjects[i] = Subject{Name: "receipt:" + b.ReceiptID, Digest: map[string]string{"sha256": b.ReceiptDigest}}
	}
	return subjects
}
