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
const SurvivorsNote = "processes of this action outlived the broker that started it; the next broker found them where foundIn says and, when identifiedBy proves they are the action's own, ended them as endedBy says (gone: none was left), and otherwise only reported them; the action's outcome stays unknown and nothing was run again"

// survivorsNoteCgroupOnly is the note of the records written before
// identifiedBy existed, when survivors were searched for only in the
// action's cgroups. Such records still verify.
const survivorsNoteCgroupOnly = "processes of this action outlived the broker that started it and were found in its cgroups by the next broker, which ended them; the action's outcome stays unknown and nothing was run again"

// How a survivors record's processes were proven the action's own.
const (
	// IdentifiedByCgroup: they were inside the action's cgroups, which
	// no process of the action can leave.
	IdentifiedByCgroup = "cgroup"
	// IdentifiedByPidStart: the action's first process was still the
	// process recorded at launch (the same pid, start time and boot), and
	// they were in its process group, which no process of the action can
	// leave and whose id cannot be reused while that process lives.
	IdentifiedByPidStart = "pid-start"
	// IdentifiedByNone: nothing proves they are the action's own (its
	// first process is gone); they were reported, not ended.
	IdentifiedByNone = "none"
)

// Survivor is one process found.
type Survivor struct {
	Pid     int64  `json:"pid"`
	Command string `json:"command"` // its command line as found, bounded; "" when unreadable
}

// Survivors is the survivors-ended.v1 predicate: a signed, chained record
// that a later broker found processes of an unknown action still running,
// what proved them its own (IdentifiedBy), what they were, and how it
// ended them; or, when nothing proved it, that it only reported them. It
// names the action's unknown receipt, which it does not change. A record
// without IdentifiedBy predates it: its processes were found in the
// action's cgroups.
type Survivors struct {
	Format        string     `json:"format"`
	Action        string     `json:"action"`
	ReceiptID     string     `json:"receiptId"`
	ReceiptDigest string     `json:"receiptDigest"` // chain digest of the unknown receipt's statement
	At            Time       `json:"at"`
	FoundIn       string     `json:"foundIn"`                // the action's cgroup directories, or its process group
	IdentifiedBy  string     `json:"identifiedBy,omitempty"` // IdentifiedByCgroup, IdentifiedByPidStart or IdentifiedByNone
	Processes     []Survivor `json:"processes"`
	EndedBy       string     `json:"endedBy"` // cgroup.kill, or SIGKILL to each member; "" when identified by none
	Gone          bool       `json:"gone"`    // none of them was left afterwards
	Note          string     `json:"note"`
	LogIndex      int64      `json:"logIndex"`
	Previous      string     `json:"previousReceiptDigest,omitempty"`
}

func (s *Survivors) validate() error {
	if s.Format != SurvivorsFormat || s.Action == "" || s.ReceiptID == "" || s.FoundIn == "" || len(s.Processes) == 0 {
		return errorf("survivors record: format, action, receipt, where they were found and processes are required")
	}
	switch {
	case s.IdentifiedBy == "" && s.Note != survivorsNoteCgroupOnly, s.IdentifiedBy != "" && s.Note != SurvivorsNote:
		return errorf("survivors record: the note is not the one of its kind")
	case s.IdentifiedBy == IdentifiedByNone && (s.EndedBy != "" || s.Gone):
		return errorf("survivors record: processes identified by nothing are reported, never ended")
	case s.IdentifiedBy != IdentifiedByNone && s.EndedBy == "":
		return errorf("survivors record: how the identified processes were ended is required")
	case s.IdentifiedBy != "" && s.IdentifiedBy != IdentifiedByCgroup && s.IdentifiedBy != IdentifiedByPidStart && s.IdentifiedBy != IdentifiedByNone:
		return errorf("survivors record: identifiedBy %q is not one of %s, %s, %s", s.IdentifiedBy, IdentifiedByCgroup, IdentifiedByPidStart, IdentifiedByNone)
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
