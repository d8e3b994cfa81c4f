package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"

	"warrant/wire"
)

// SurvivorsFormat names the survivors record's predicate shape.
const SurvivorsFormat = "survivors-ended.v1"

// SurvivorsNote is written into every survivors record.
const SurvivorsNote = "processes of this action outlived the broker that started it and were found in its cgroups by the next broker, which ended them; the action's outcome stays unknown and nothing was run again"

// Survivor is one process found.
type Survivor struct {
	Pid     int64  `json:"pid"`
	Command string `json:"command"` // its command line as found, bounded; "" when unreadable
}

// Survivors is the survivors-ended.v1 predicate: a signed, chained record
// that a later broker found processes of an unknown action still inside
// the action's cgroups (the proof that they are its own), what they were,
// and how it ended them. It names the action's unknown receipt, which it
// does not change.
type Survivors struct {
	Format        string     `json:"format"`
	Action        string     `json:"action"`
	ReceiptID     string     `json:"receiptId"`
	ReceiptDigest string     `json:"receiptDigest"` // chain digest of the unknown receipt's statement
	At            Time       `json:"at"`
	FoundIn       string     `json:"foundIn"` // the action's cgroup directories
	Processes     []Survivor `json:"processes"`
	EndedBy       string     `json:"endedBy"` // cgroup.kill, or SIGKILL to each listed member
	Gone          bool       `json:"gone"`    // the cgroups were seen empty afterwards
	Note          string     `json:"note"`
	LogIndex      int64      `json:"logIndex"`
	Previous      string     `json:"previousReceiptDigest,omitempty"`
}

func (s *Survivors) validate() error {
	if s.Format != SurvivorsFormat || s.Note != SurvivorsNote || s.Action == "" || s.ReceiptID == "" ||
		s.FoundIn == "" || s.EndedBy == "" || len(s.Processes) == 0 {
		return errorf("survivors record: format, note, action, receipt, cgroups, processes and how they were ended are required")
	}
	if err := checkHex("receiptDigest", s.ReceiptDigest); err != nil {
		return err
	}
	if s.Previous != "" {
		return checkHex("previousReceiptDigest", s.Previous)
	}
	return nil
}

func decodeSurvivors(b []byte) (*Survivors, error) {
	var s Survivors
	if err := strictJSON(b, &s); err != nil {
		return nil, fmt.Errorf("decode survivors record: %w", err)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("decode survivors record: %w", err)
	}
	if again, _ := json.Marshal(&s); !bytes.Equal(again, b) {
		return nil, fmt.Errorf("decode survivors record: %w: not in canonical form", ErrInvalid)
	}
	return &s, nil
}

func survivorsSubjects(s *Survivors) []Subject {
	return []Subject{{Name: "receipt:" + s.ReceiptID, Digest: map[string]string{"sha256": s.ReceiptDigest}}}
}

// EndedSurvivors appends a signed survivors record for s.Action, naming
// the last receipt of that action among entries (the whole log, as for
// Prune), which must be its unknown receipt. It fills in the receipt, the
// note, the format and the chain links.
func (c *Chain) EndedSurvivors(entries []Entry, s Survivors) (Entry, error) {
	if int64(len(entries)) != c.n {
		return Entry{}, fmt.Errorf("record survivors: %d entries given, the log holds %d", len(entries), c.n)
	}
	for i := len(entries) - 1; i >= 0 && s.ReceiptID == ""; i-- {
		ch := checkEntry(entries[i].Envelope, c.keys.Public())
		if ch.err != nil || ch.receipt == nil || ch.receipt.Action != s.Action {
			continue
		}
		if ch.receipt.Outcome != wire.OutcomeUnknown {
			return Entry{}, fmt.Errorf("record survivors: the receipt of %s says %s, not unknown", s.Action, ch.receipt.Outcome)
		}
		s.ReceiptID, s.ReceiptDigest = ch.receipt.ID, ch.payload
	}
	if s.ReceiptID == "" {
		return Entry{}, fmt.Errorf("record survivors: action %s has no receipt in the log", s.Action)
	}
	s.Format, s.Note, s.LogIndex, s.Previous = SurvivorsFormat, SurvivorsNote, c.n, c.prev
	if err := s.validate(); err != nil {
		return Entry{}, fmt.Errorf("record survivors: %w", err)
	}
	pred, err := json.Marshal(&s)
	if err != nil {
		panic("receipt: internal error: encode survivors record: " + err.Error())
	}
	return c.append(statement(SurvivorsPredicate, survivorsSubjects(&s), pred), nil)
}
