package receipt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"warrant/wire"
)

// A receipt made before each limit had its own enforcer carries one word;
// it still decodes, re-encodes to the same bytes and claims no memory or
// process-count figure.
func TestOlderEnforcedByStillDecodes(t *testing.T) {
	r := testReceipt("old", wire.Exited)
	r.Limits = Limits{WallNs: 1, GraceNs: 1, CPUSeconds: 1, Retain: 1, HardOutput: 2, FileSize: 1, OpenFiles: 1,
		EnforcedBy: Enforcement{All: EnforcedByRlimit}}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"openFiles":1,"enforcedBy":"rlimit"}`)) {
		t.Fatalf("not the older form: %s", b)
	}
	back, err := DecodeReceipt(b)
	if err != nil || back.Limits.EnforcedBy.All != EnforcedByRlimit || back.Limits.EnforcedBy.String() != "rlimit" {
		t.Fatalf("decode: %+v %v", back, err)
	}
	r.Limits.MemoryBytes = 1 << 30
	if _, err := r.Encode(); err == nil {
		t.Fatal("an older receipt claimed a memory limit")
	}
}

// Each limit names its enforcer; a memory or process-count figure is
// there exactly when a cgroup enforced it, and a usage counter exactly
// when its limit was.
func TestEnforcementClaimsNoMoreThanApplied(t *testing.T) {
	r := testReceipt("lim", wire.Signaled)
	r.Limits = LimitsOf(wire.ProfileShort, Launched(EnforcedByCgroupV1, EnforcedByNone))
	if r.Limits.MemoryBytes != 2<<30 || r.Limits.Pids != 0 {
		t.Fatalf("limits %+v", r.Limits)
	}
	one, zero := uint64(1), uint64(0)
	r.Usage, r.LimitReached = &Usage{OOMKills: &one}, LimitMemory
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `"memoryBytes":2147483648,"enforcedBy":{"wall":"broker","cpu":"rlimit","fileSize":"rlimit","openFiles":"rlimit","output":"broker","memory":"cgroup_v1","pids":"none"}`
	if !bytes.Contains(b, []byte(want)) || !bytes.Contains(b, []byte(`"limitReached":"memory","usage":{"oomKills":1}`)) {
		t.Fatalf("encoding: %s", b)
	}
	if _, err := DecodeReceipt(b); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Receipt){
		"pids figure without a cgroup":   func(r *Receipt) { r.Limits.Pids = 256 },
		"memory figure without a cgroup": func(r *Receipt) { r.Limits.EnforcedBy.Memory = EnforcedByNone },
		"unknown enforcer":               func(r *Receipt) { r.Limits.EnforcedBy.CPU = "kernel" },
		"empty enforcer":                 func(r *Receipt) { r.Limits.EnforcedBy.Wall = "" },
		"pids counter without a cgroup":  func(r *Receipt) { r.Usage.PidsLimitHits = &zero },
		"limit reached without a kill":   func(r *Receipt) { r.Usage.OOMKills = &zero },
		"a kill without limit reached":   func(r *Receipt) { r.LimitReached = "" },
		"another limit reached":          func(r *Receipt) { r.LimitReached = "pids" },
		"usage of an unstarted action":   func(r *Receipt) { r.Start = nil; r.Outcome = wire.OutcomeUnknown },
	}
	for name, edit := range bad {
		c := *r
		u := *r.Usage
		c.Usage, c.Limits = &u, r.Limits
		edit(&c)
		if _, err := c.Encode(); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	if !strings.Contains(Uniform(EnforcedByNone).String(), "none") || Uniform(EnforcedByUnknown).String() != "unknown" {
		t.Fatal("a uniform enforcement is not one word")
	}
}

// A survivors record names the action's unknown receipt by its chain
// digest and verifies; one naming any other receipt does not.
func TestSurvivorsRecordVerifies(t *testing.T) {
	k := testKeys(t)
	c, _ := NewChain(k, nil)
	var entries []Entry
	for _, o := range []wire.Outcome{wire.OutcomeUnknown, wire.Exited} {
		e, err := c.Seal(testReceipt("s"+o.String(), o))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	rec := Survivors{Action: "act-sunknown", At: at(20), FoundIn: "/sys/fs/cgroup/pids/warrant/x/act-sunknown",
		IdentifiedBy: IdentifiedByCgroup, Processes: []Survivor{{Pid: 4242, Command: "sleep 300"}}, EndedBy: "cgroup.kill", Gone: true}
	if _, err := c.EndedSurvivors(entries, Survivors{Action: "act-sexited", FoundIn: "x", IdentifiedBy: IdentifiedByCgroup, EndedBy: "y",
		Processes: rec.Processes}); err == nil {
		t.Fatal("survivors recorded against a receipt that is not unknown")
	}
	e, err := c.EndedSurvivors(entries, rec)
	if err != nil {
		t.Fatal(err)
	}
	entries = append(entries, e)
	cp, _ := c.Checkpoint()
	rep := Verify(entries, [][]byte{cp}, k.Public())
	if !rep.OK() || rep.Receipts != 2 || rep.Survivors != 1 {
		t.Fatalf("report %+v", rep)
	}
	// The same record placed before the receipt it names is refused.
	c2, _ := NewChain(k, nil)
	e0, _ := c2.Seal(testReceipt("s"+wire.Exited.String(), wire.Exited))
	forged := Survivors{Format: SurvivorsFormat, Note: SurvivorsNote, IdentifiedBy: IdentifiedByCgroup, Action: rec.Action, ReceiptID: "r-none",
		ReceiptDigest: strings.Repeat("ab", 32), At: rec.At, FoundIn: rec.FoundIn, Processes: rec.Processes,
		EndedBy: rec.EndedBy, Gone: true, LogIndex: 1}
	e1, err := c2.appendSurvivorsForTest(&forged)
	if err != nil {
		t.Fatal(err)
	}
	if rep := Verify([]Entry{e0, e1}, nil, k.Public()); rep.OK() || rep.Problems[0].Kind != ProblemSurvivors {
		t.Fatalf("a record naming no earlier unknown receipt verified: %+v", rep)
	}
}

// A survivors record says what proved its processes the action's own. One
// written before identifiedBy existed (cgroups alone, the old note) still
// verifies; processes identified by nothing are reported, never claimed
// ended; an unknown proof, a note of the other kind, or an identified
// record without how its processes were ended is refused, whether it is
// being written or read back.
func TestSurvivorsRecordKinds(t *testing.T) {
	base := Survivors{Format: SurvivorsFormat, Action: "act-sunknown", ReceiptID: "r-x", ReceiptDigest: strings.Repeat("ab", 32),
		At: at(20), FoundIn: "process group 4242", Processes: []Survivor{{Pid: 4242, Command: "sleep 300"}}}
	for _, c := range []struct {
		name string
		edit func(*Survivors)
		ok   bool
	}{
		{"legacy cgroup record", func(s *Survivors) { s.Note, s.EndedBy, s.Gone = survivorsNoteCgroupOnly, "cgroup.kill", true }, true},
		{"pid and start time, ended", func(s *Survivors) { s.IdentifiedBy, s.EndedBy, s.Gone = IdentifiedByPidStart, "SIGKILL", true }, true},
		{"unproven, reported", func(s *Survivors) { s.IdentifiedBy = IdentifiedByNone }, true},
		{"unproven, claimed ended", func(s *Survivors) { s.IdentifiedBy, s.EndedBy = IdentifiedByNone, "SIGKILL" }, false},
		{"unproven, claimed gone", func(s *Survivors) { s.IdentifiedBy, s.Gone = IdentifiedByNone, true }, false},
		{"identified, not ended", func(s *Survivors) { s.IdentifiedBy = IdentifiedByPidStart }, false},
		{"unknown proof", func(s *Survivors) { s.IdentifiedBy, s.EndedBy = "hunch", "SIGKILL" }, false},
		{"legacy note on a new record", func(s *Survivors) {
			s.IdentifiedBy, s.EndedBy, s.Note = IdentifiedByPidStart, "SIGKILL", survivorsNoteCgroupOnly
		}, false},
		{"new note on a legacy record", func(s *Survivors) { s.EndedBy, s.Note = "cgroup.kill", SurvivorsNote }, false},
	} {
		s := base
		s.Note = SurvivorsNote
		c.edit(&s)
		if err := s.validate(); (err == nil) != c.ok {
			t.Errorf("%s: validate: %v", c.name, err)
		}
		b, _ := json.Marshal(&s)
		if _, err := decodeSurvivors(b); (err == nil) != c.ok {
			t.Errorf("%s: decode: %v", c.name, err)
		}
	}
}

// appendSurvivorsForTest signs and chains s as it is, unchecked.
func (c *Chain) appendSurvivorsForTest(s *Survivors) (Entry, error) {
	s.LogIndex, s.Previous = c.n, c.prev
	pred, err := json.Marshal(s)
	if err != nil {
		return Entry{}, err
	}
	return c.append(statement(SurvivorsPredicate, survivorsSubjects(s), pred), nil)
}
