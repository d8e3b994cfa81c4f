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
