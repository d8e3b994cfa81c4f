package wire

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// withEntries is the sample policy with n /etc entries, each pinned, and
// excluded paths.
func withEntries(n int, excluded ...string) Policy {
	p := samplePolicy()
	for i := range n {
		e := fmt.Sprintf("/etc/e%04d", i)
		p.ReadEntries = append(p.ReadEntries, e)
		p.Pins = append(p.Pins, PathPin{Path: e, Dev: 2049, Ino: uint64(100 + i)})
	}
	p.Excluded = excluded
	slices.SortFunc(p.Pins, func(x, y PathPin) int { return strings.Compare(x.Path, y.Path) })
	return p
}

// TestPolicyEntries: read_entries and excluded round-trip within their
// caps (512 and 256, pins growing with the entries), and are refused past
// them, as is an entry without a pin; a policy without them encodes as
// before (both members absent).
func TestPolicyEntries(t *testing.T) {
	many := make([]string, 256)
	for i := range many {
		many[i] = fmt.Sprintf("/etc/x%03d", i)
	}
	ok := sampleSpawn(false)
	ok.Policy = withEntries(512, many...)
	b, err := EncodeFrame(ok)
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeFrame(b, MaxLauncherFrame, SpawnChannel)
	if err != nil || !slices.Equal(m.(*SpawnRequest).Policy.ReadEntries, ok.Policy.ReadEntries) || !slices.Equal(m.(*SpawnRequest).Policy.Excluded, many) {
		t.Fatalf("512 entries and 256 excluded paths (%d bytes) do not round-trip: %v", len(b), err)
	}
	unpinned := withEntries(1)
	unpinned.ReadEntries = append(unpinned.ReadEntries, "/etc/unpinned")
	for name, pol := range map[string]Policy{
		"513 entries":  withEntries(513),
		"257 excluded": withEntries(1, append(many, "/etc/y")...),
		"unpinned":     unpinned,
		"relative":     withEntries(1, "etc/shadow"),
	} {
		r := sampleSpawn(false)
		r.Policy = pol
		if _, err := EncodeFrame(r); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	plain, err := Encode(sampleSpawn(false))
	if err != nil || strings.Contains(string(plain), "read_entries") || strings.Contains(string(plain), "excluded") {
		t.Fatalf("a policy without entries encodes them: %v", err)
	}
}

// BenchmarkDecodeSpawnRequest is the launcher's decode of a request
// with a host's /etc (140 entries), its checks and the canonical
// re-encoding included.
func BenchmarkDecodeSpawnRequest(b *testing.B) {
	r := sampleSpawn(true)
	r.Policy = withEntries(140, "/etc/shadow")
	buf, err := EncodeFrame(r)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeFrame(buf, MaxLauncherFrame, SpawnChannel); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPrepared: a policy's Prepare is its /etc entries with their pins,
// sorted by path, and round-trips; a Prepare out of order, with an entry
// twice or of another protocol is not encoded.
func TestPrepared(t *testing.T) {
	pol := withEntries(3)
	pol.ReadEntries = []string{"/etc/e0002", "/etc/e0000", "/etc/e0001"}
	p := pol.Prepared()
	want := []PathPin{{"/etc/e0000", 2049, 100}, {"/etc/e0001", 2049, 101}, {"/etc/e0002", 2049, 102}}
	if p.Protocol != SpawnProtocol || !slices.Equal(p.Entries, want) {
		t.Fatalf("Prepared() = %+v, want %v", p, want)
	}
	b, err := EncodeFrame(p)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := DecodeFrame(b, MaxLauncherFrame, SpawnChannel); err != nil || !slices.Equal(m.(*Prepare).Entries, want) {
		t.Fatalf("decoded %+v, %v", m, err)
	}
	for name, bad := range map[string]*Prepare{
		"unsorted":   {Protocol: SpawnProtocol, Entries: []PathPin{want[1], want[0]}},
		"twice":      {Protocol: SpawnProtocol, Entries: []PathPin{want[0], want[0]}},
		"protocol 4": {Protocol: 4, Entries: want},
	} {
		if _, err := EncodeFrame(bad); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}
