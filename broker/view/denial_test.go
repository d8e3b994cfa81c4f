package view

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// Every rule is said in words and has a remedy, and every remedy says
// that the agent cannot grant it.
func TestEveryRuleHasAWhyAndARemedy(t *testing.T) {
	for r := wire.DenialRule(1); !strings.HasPrefix(r.String(), "invalid("); r++ {
		for e := wire.DenialEffect(1); !strings.HasPrefix(e.String(), "invalid("); e++ {
			d := denialOf(&wire.Denial{Effect: e, Call: "c", Rule: r, Source: wire.SourceBroker, Count: 1})
			if d.Why == "" || !strings.HasSuffix(d.Remedy, cannotGrant) || len(d.Remedy) <= len(cannotGrant)+10 {
				t.Errorf("%s/%s: why %q, remedy %q", r, e, d.Why, d.Remedy)
			}
		}
	}
	read := denialOf(&wire.Denial{Effect: wire.EffectRead, Call: "openat", Rule: wire.RuleLandlock, Source: wire.SourceKernelAudit, Count: 1})
	if !strings.Contains(read.Remedy, "broker serve --read-path DIR") {
		t.Errorf("a read Landlock refused: remedy %q", read.Remedy)
	}
}

// A read the kernel's audit saw refused of a file runtimes probe is
// routine, and its remedy is not a read path (none may open /proc, /sys
// or /dev). Any other refusal of Landlock's stays listed: another
// process's environ, /proc itself, a device.
func TestRuntimeProbesAreRoutine(t *testing.T) {
	const hostState, readPath = "no read path opens the host's /proc, /sys or /dev", "broker serve --read-path DIR"
	for _, c := range []struct {
		d       wire.Denial
		routine bool
		remedy  string
	}{
		{wire.Denial{Effect: wire.EffectRead, Call: "fs.read_file", Object: "/proc/PID/cgroup", Rule: wire.RuleLandlock}, true, hostState},
		{wire.Denial{Effect: wire.EffectRead, Call: "fs.read_file", Object: "/proc/meminfo", Rule: wire.RuleLandlock}, true, hostState},
		{wire.Denial{Effect: wire.EffectRead, Call: "fs.read_file", Object: "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", Rule: wire.RuleLandlock}, true, hostState},
		{wire.Denial{Effect: wire.EffectRead, Call: "fs.read_file", Object: "/proc/1/environ", Rule: wire.RuleLandlock}, false, hostState},
		{wire.Denial{Effect: wire.EffectRead, Call: "fs.read_dir", Object: "/proc", Rule: wire.RuleLandlock}, false, hostState},
		{wire.Denial{Effect: wire.EffectRead, Call: "fs.read_file", Object: "/dev/sda", Rule: wire.RuleLandlock}, false, hostState},
		{wire.Denial{Effect: wire.EffectRead, Call: "fs.read_file", Object: "/root/.bashrc", Rule: wire.RuleLandlock}, false, readPath},
		{wire.Denial{Effect: wire.EffectRead, Call: "fs.read_file", Object: "/processes", Rule: wire.RuleLandlock}, false, readPath},
		{wire.Denial{Effect: wire.EffectExec, Call: "fs.execute", Object: "/sys/x", Rule: wire.RuleLandlock}, false, hostState},
		{wire.Denial{Effect: wire.EffectWrite, Call: "fs.write_file", Object: "/proc/PID/attr/current", Rule: wire.RuleOutsideScope}, false, "writable"},
	} {
		c.d.Source, c.d.Count = wire.SourceKernelAudit, 1
		if got := Routine(&c.d); got != c.routine {
			t.Errorf("%s %s: routine %v, want %v", c.d.Call, c.d.Object, got, c.routine)
		}
		if r := denialOf(&c.d).Remedy; !strings.Contains(r, c.remedy) {
			t.Errorf("%s %s: remedy %q, want it to say %q", c.d.Call, c.d.Object, r, c.remedy)
		}
	}
	hint := wire.Denial{Effect: wire.EffectRead, Call: "openat", Object: "/proc/PID/cgroup", Rule: wire.RuleLandlock, Source: wire.SourceHint, Count: 1}
	if Routine(&hint) {
		t.Errorf("a refusal of another source is routine: %+v", hint)
	}
}

// testDenials are refusals of four classes, some of whose calls no
// record lists (as past the cap).
func testDenials(at int64) *wire.Denials {
	return &wire.Denials{Sources: []string{"broker", "filter-count"}, Total: 10, Counts: []wire.DenialCount{
		{Effect: wire.EffectSocket, Call: "socket", Family: "AF_UNIX", Rule: wire.RuleHostSocket, Source: wire.SourceFilterCount, Count: 2},
		{Effect: wire.EffectSocket, Call: "socket", Family: "AF_INET", Rule: wire.RuleNoNetwork, Source: wire.SourceFilterCount, Count: 4},
		{Effect: wire.EffectMetadata, Call: "chmod", Rule: wire.RuleOutsideScope, Source: wire.SourceBroker, Count: 1},
		{Effect: wire.EffectPtrace, Call: "ptrace", Rule: wire.RuleNoPtrace, Source: wire.SourceFilterCount, Count: 3},
	}, Records: []wire.Denial{
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_UNIX SOCK_STREAM", Family: "AF_UNIX", Rule: wire.RuleHostSocket,
			Source: wire.SourceFilterCount, Count: 2, FirstUnixNs: at},
		{Effect: wire.EffectSocket, Call: "socket", Object: "AF_INET SOCK_STREAM", Family: "AF_INET", Rule: wire.RuleNoNetwork,
			Source: wire.SourceFilterCount, Count: 3, FirstUnixNs: at},
		{Effect: wire.EffectMetadata, Call: "chmod", Object: "/etc/hosts", Rule: wire.RuleOutsideScope,
			Source: wire.SourceBroker, Count: 1, FirstUnixNs: at},
	}}
}

func testEnding(exit int32, d *wire.Denials) Ending {
	return Ending{Handle: "a-1", Status: &wire.Status{Handle: "a-1", State: wire.StateTerminal,
		Result: &wire.Result{Outcome: wire.Exited, ExitCode: &exit, GroupGone: true, Denials: d}}}
}

// The object lists the refusals that may explain a failure apart from
// the routine ones; the summary says the first kind on a line each, and
// the routine ones only when the action did not succeed.
func TestActionSaysDenials(t *testing.T) {
	at := time.Unix(1_700_000_000, 0).UnixNano()
	d := testDenials(at)
	e := testEnding(0, d)
	a := e.Action()
	if len(a.Denials) != 2 || len(a.RoutineDenials) != 1 || a.DenialsSeen == nil || a.DenialsSeen.Total != 10 ||
		a.DenialsSeen.Unlisted != 4 || a.Denials[0].Object != "AF_INET SOCK_STREAM" || a.Denials[1].Source != "broker" {
		t.Fatalf("%+v %+v %+v", a.Denials, a.RoutineDenials, a.DenialsSeen)
	}
	wantCounts := []DenialCount{
		{Effect: "socket", Call: "socket", Family: "AF_UNIX", Rule: "host-socket", Source: "filter-count", Count: 2},
		{Effect: "socket", Call: "socket", Family: "AF_INET", Rule: "no-network", Source: "filter-count", Count: 4, Unlisted: 1},
		{Effect: "metadata", Call: "chmod", Rule: "outside-writable-scope", Source: "broker", Count: 1},
		{Effect: "ptrace", Call: "ptrace", Rule: "no-ptrace", Source: "filter-count", Count: 3, Unlisted: 3},
	}
	if !reflect.DeepEqual(a.DenialsSeen.Counts, wantCounts) {
		t.Errorf("counts %+v, want %+v", a.DenialsSeen.Counts, wantCounts)
	}
	s := a.Summary()
	for _, want := range []string{"the sandbox refused:", "socket: 3× socket(AF_INET SOCK_STREAM) (no network in the sandbox; source filter-count)",
		"metadata: 1× chmod /etc/hosts (outside the writable scope; source broker)",
		"and 4 more refused call(s) of kinds past the first 64, by class:\n    socket: 1× socket(AF_INET) (no network in the sandbox; source filter-count)",
		"\n    ptrace: 3× ptrace (no tracing or reading of another process; source filter-count) — not possible",
		"the agent cannot grant it itself"} {
		if !strings.Contains(s, want) {
			t.Errorf("the summary does not say %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "AF_UNIX") {
		t.Errorf("a successful run's summary names a routine refusal:\n%s", s)
	}
	failed := testEnding(1, d)
	if s := failed.Action(); !strings.Contains(s.Summary(), "also refused, as programs expect (they fall back):\n    socket: 2× socket(AF_UNIX SOCK_STREAM)") {
		t.Errorf("a failed run's summary leaves out the routine refusals:\n%s", s.Summary())
	}
	none := testEnding(0, &wire.Denials{Sources: []string{"broker", "filter-count"}})
	if a := none.Action(); len(a.Denials) != 0 || a.Denials == nil || a.DenialsSeen.Total != 0 || strings.Contains(a.Summary(), "refused") {
		t.Errorf("nothing refused: %+v\n%s", a, a.Summary())
	}
	unwatched := Ending{Err: wire.Errorf(wire.CodeApprovalDenied, "no")}
	if a := unwatched.Action(); a.DenialsSeen != nil || a.Denials == nil || a.RoutineDenials == nil {
		t.Errorf("an action that did not start: %+v", a)
	}
}

// receipts show lists every record, routine ones marked, and the calls
// no record accounts for by class, with their remedies.
func TestReceiptSaysDenials(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	d := receipt.DenialsOf(testDenials(at.UnixNano()), func(t time.Time) receipt.Time { return receipt.Stamp(0, t) })
	if err := d.Wire().Validate(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteRefused(&b, d.Wire())
	for _, want := range []string{
		"Refused   10 call(s), seen by broker, filter-count (4 of kinds past the first 64, not listed but counted by class)\n",
		"          routine, as programs expect: socket: 2× socket(AF_UNIX SOCK_STREAM)",
		"          metadata: 1× chmod /etc/hosts (outside the writable scope; source broker; first 2023-11-14T22:13:20.000000000Z)",
		"          not listed, by class:\n            socket: 1× socket(AF_INET) (no network in the sandbox; source filter-count)",
		"\n            ptrace: 3× ptrace (no tracing or reading of another process; source filter-count) — not possible in warrant",
		"the agent cannot grant it itself\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("receipts show does not say %q:\n%s", want, b.String())
		}
	}
}

// A hint is not a refusal seen: broker run's text lists hints under
// their own heading, not "the sandbox refused:", and receipts show
// counts them apart from the refused calls.
func TestHintsSaidApart(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	d := &wire.Denials{Sources: []string{"broker", "hint"}, Total: 3, Counts: []wire.DenialCount{
		{Effect: wire.EffectMetadata, Call: "chmod", Rule: wire.RuleOutsideScope, Source: wire.SourceBroker, Count: 1},
		{Effect: wire.EffectCreate, Call: "openat", Rule: wire.RuleOutsideScope, Source: wire.SourceHint, Count: 2},
	}, Records: []wire.Denial{
		{Effect: wire.EffectCreate, Call: "openat", Object: "/etc/x", Rule: wire.RuleOutsideScope, Source: wire.SourceHint,
			Count: 2, FirstUnixNs: at.UnixNano()},
		{Effect: wire.EffectMetadata, Call: "chmod", Object: "/etc/hosts", Rule: wire.RuleOutsideScope, Source: wire.SourceBroker,
			Count: 1, FirstUnixNs: at.UnixNano()},
	}}
	e := testEnding(1, d)
	a := e.Action()
	if len(a.Denials) != 2 || a.DenialsSeen.Total != 3 {
		t.Fatalf("%+v %+v", a.Denials, a.DenialsSeen)
	}
	s := a.Summary()
	for _, want := range []string{
		"\n  the sandbox refused:\n    metadata: 1× chmod /etc/hosts (outside the writable scope; source broker) — ",
		"\n  writes Landlock refuses, seen only as hints (the target's path; Landlock's own refusal not seen):\n    create: 2× openat /etc/x ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the summary does not say %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "the sandbox refused:") != 1 || strings.Index(s, "openat /etc/x") < strings.Index(s, "hints") {
		t.Errorf("a hint listed as a refusal:\n%s", s)
	}
	onlyHints := testEnding(1, &wire.Denials{Sources: d.Sources, Total: 2, Counts: d.Counts[1:], Records: d.Records[:1]})
	if a := onlyHints.Action(); strings.Contains(a.Summary(), "the sandbox refused") || !strings.Contains(a.Summary(), "seen only as hints") {
		t.Errorf("hints alone:\n%s", a.Summary())
	}
	r := receipt.DenialsOf(d, func(t time.Time) receipt.Time { return receipt.Stamp(0, t) })
	if err := r.Wire().Validate(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteRefused(&b, r.Wire())
	if want := "Refused   1 call(s) and 2 hint(s), seen by broker, hint\n"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("receipts show does not say %q:\n%s", want, b.String())
	}
}
