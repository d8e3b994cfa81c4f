package denial

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// A flood of refusals, most of kinds past the cap: the records stay at
// the cap, the total and each kept record's count are exact, and the
// result validates.
func TestLogBoundedAndExact(t *testing.T) {
	l := New(wire.SourceBroker, wire.SourceFilterCount)
	start := time.Unix(1700000000, 0)
	socket := wire.Denial{Effect: wire.EffectSocket, Call: "socket", Object: "AF_INET SOCK_STREAM",
		Rule: wire.RuleNoNetwork, Source: wire.SourceFilterCount}
	for i := range 10_000 {
		l.Add(socket, start.Add(time.Duration(i)))
		l.Add(wire.Denial{Effect: wire.EffectMetadata, Call: "chmod", Object: fmt.Sprintf("/etc/f%d", i),
			Rule: wire.RuleOutsideScope, Source: wire.SourceBroker}, start)
	}
	d := l.Denials()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(d.Records) != wire.MaxDenials || d.Total != 20_000 {
		t.Fatalf("%d records, total %d; want %d and 20000", len(d.Records), d.Total, wire.MaxDenials)
	}
	if r := d.Records[0]; r.Count != 10_000 || r.FirstUnixNs != start.UnixNano() || r.Object != "AF_INET SOCK_STREAM" {
		t.Fatalf("the socket record: %+v", r)
	}
	if r := d.Records[wire.MaxDenials-1]; r.Count != 1 || r.Object != fmt.Sprintf("/etc/f%d", wire.MaxDenials-2) {
		t.Fatalf("the last record kept: %+v", r)
	}
	if got := d.Total - d.Listed(); got != 10_000-(wire.MaxDenials-1) {
		t.Fatalf("%d calls past the cap, want %d", got, 10_000-(wire.MaxDenials-1))
	}
	if len(d.Counts) != 2 || d.Counts[0].Count != 10_000 || d.Counts[1].Count != 10_000 || d.Counts[1].Call != "chmod" {
		t.Fatalf("the counts: %+v", d.Counts)
	}
}

// A target that fills the samples with cheap refusals of distinct objects
// (200 socket families) hides nothing after them: the ptrace that follows
// has its exact count, and Unlisted names it.
func TestLogFloodHidesNoClass(t *testing.T) {
	l := New(wire.SourceFilterCount)
	for f := range 200 {
		family := "other"
		if f == 2 {
			family = "AF_INET"
		}
		l.Add(wire.Denial{Effect: wire.EffectSocket, Call: "socket", Object: fmt.Sprintf("family %d SOCK_STREAM", f),
			Family: family, Rule: wire.RuleNoNetwork, Source: wire.SourceFilterCount}, time.Now())
	}
	ptrace := wire.Denial{Effect: wire.EffectPtrace, Call: "ptrace", Object: "PTRACE_ATTACH", Rule: wire.RuleNoPtrace,
		Source: wire.SourceFilterCount}
	l.Add(ptrace, time.Now())
	l.Add(ptrace, time.Now())
	d := l.Denials()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(d.Records) != wire.MaxDenials || d.Total != 202 || len(d.Counts) != 3 {
		t.Fatalf("%d records, %d counts, total %d", len(d.Records), len(d.Counts), d.Total)
	}
	want := wire.DenialCount{Effect: wire.EffectPtrace, Call: "ptrace", Rule: wire.RuleNoPtrace, Source: wire.SourceFilterCount, Count: 2}
	if d.Counts[2] != want {
		t.Fatalf("the ptrace count: %+v, want %+v", d.Counts[2], want)
	}
	if u := d.Unlisted(); len(u) != 3 || d.Counts[0].Family != "other" || u[0] != 199-(wire.MaxDenials-1) ||
		d.Counts[1].Family != "AF_INET" || u[1] != 0 || u[2] != 2 {
		t.Fatalf("unlisted: %v of %+v", u, d.Counts)
	}
}

func TestLogEmptySaysWhoWatched(t *testing.T) {
	d := New(wire.SourceFilterCount).Denials()
	if len(d.Sources) != 1 || d.Sources[0] != "filter-count" || d.Total != 0 || d.Records != nil {
		t.Fatalf("%+v", d)
	}
}

// Sources added later (a hint observer, the kernel's audit) are listed
// in the wire's order, each once, whichever was added first; a refusal
// from one is taken once it watches.
func TestLogWatchKeepsTheWiresOrder(t *testing.T) {
	l := New(wire.SourceBroker, wire.SourceFilterCount)
	l.Watch(wire.SourceHint)
	l.Watch(wire.SourceKernelAudit)
	l.Watch(wire.SourceHint)
	l.Add(wire.Denial{Effect: wire.EffectRead, Call: "openat", Rule: wire.RuleLandlock, Source: wire.SourceKernelAudit}, time.Now())
	d := l.Denials()
	if got := strings.Join(d.Sources, ","); got != "broker,kernel-audit,filter-count,hint" || d.Total != 1 {
		t.Fatalf("sources %s, total %d", got, d.Total)
	}
}

func TestLogRefusesAnUnwatchedSource(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a refusal from a source that does not watch was taken")
		}
	}()
	New(wire.SourceBroker).Add(wire.Denial{Effect: wire.EffectRead, Call: "openat", Rule: wire.RuleLandlock,
		Source: wire.SourceKernelAudit}, time.Now())
}

// A path the target chose becomes text every record format carries
// exactly and a terminal shows as it is (wire.DenialObject): invalid
// bytes, control and invisible format characters escaped, bounded in
// length.
func TestLogObjectsAreText(t *testing.T) {
	for in, want := range map[string]string{
		"/ws/plain file":         "/ws/plain file",
		"/ws/\x1b[2Jclear\n":     `/ws/\x1b[2Jclear\x0a`,
		"/ws/\u202egnp.exe":      `/ws/\xe2\x80\xaegnp.exe`,
		strings.Repeat("é", 600): strings.Repeat("é", 512) + "…",
	} {
		l := New(wire.SourceBroker)
		l.Add(wire.Denial{Effect: wire.EffectMetadata, Call: "chmod", Object: in, Rule: wire.RuleOutsideScope,
			Source: wire.SourceBroker}, time.Now())
		d := l.Denials()
		if got := d.Records[0].Object; got != want || d.Validate() != nil {
			t.Errorf("%q: %q (%v), want %q", in, got, d.Validate(), want)
		}
	}
}
