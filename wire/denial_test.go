package wire

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDenialEnums(t *testing.T) {
	checkEnumType[DenialEffect](t, denialEffectNames)
	checkEnumType[DenialSource](t, denialSourceNames)
	checkEnumType[DenialRule](t, denialRuleNames)
	s := schema(t)
	for rule, names := range map[string][]string{"denial-effect": denialEffectNames,
		"denial-source": denialSourceNames, "denial-rule": denialRuleNames} {
		if got := literals(s.Rules[rule]); !slices.Equal(got, names[1:]) {
			t.Errorf("rule %s = %q, Go has %q", rule, got, names[1:])
		}
	}
}

func sampleDenials() *Denials {
	return &Denials{Sources: []string{"broker", "filter-count"}, Total: 7, Counts: []DenialCount{
		{Effect: EffectMetadata, Call: "chmod", Rule: RuleOutsideScope, Source: SourceBroker, Count: 1},
		{Effect: EffectSocket, Call: "socket", Family: "AF_INET", Rule: RuleNoNetwork, Source: SourceFilterCount, Count: 4},
		{Effect: EffectSession, Call: "setsid", Rule: RuleNoSession, Source: SourceFilterCount, Count: 1},
		{Effect: EffectPtrace, Call: "ptrace", Rule: RuleNoPtrace, Source: SourceFilterCount, Count: 1},
	}, Records: []Denial{
		{Effect: EffectMetadata, Call: "chmod", Object: "/etc/passwd", Rule: RuleOutsideScope, Source: SourceBroker,
			Count: 1, FirstUnixNs: 1700000000000000000},
		{Effect: EffectSocket, Call: "socket", Object: "AF_INET SOCK_STREAM", Family: "AF_INET", Rule: RuleNoNetwork,
			Source: SourceFilterCount, Count: 3, FirstUnixNs: 1700000000000000001},
		{Effect: EffectSession, Call: "setsid", Rule: RuleNoSession, Source: SourceFilterCount, Count: 1,
			FirstUnixNs: 1700000000000000002},
	}}
}

// A status carrying denials goes through the codec unchanged, and the
// schema walk sees the denial types.
func TestDenialsRoundTrip(t *testing.T) {
	res := sampleResult()
	res.Denials = sampleDenials()
	st := &Status{Handle: "a-1", State: StateTerminal, Result: res}
	b, err := Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b, channelOf(st.Type()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.(*Status).Result.Denials, res.Denials) {
		t.Fatalf("decoded %+v, want %+v", got.(*Status).Result.Denials, res.Denials)
	}
	c := &typeChecker{t: t, s: schema(t)}
	c.compare(reflect.TypeFor[Denials](), schema(t).Rules["denials"], "denials")
}

func TestDenialsValidate(t *testing.T) {
	if err := sampleDenials().Validate(); err != nil {
		t.Fatal(err)
	}
	many := &Denials{Sources: []string{"broker"}, Total: MaxDenials + 1}
	for range MaxDenials + 1 {
		many.Records = append(many.Records, Denial{Effect: EffectMetadata, Call: "chmod", Rule: RuleOutsideScope,
			Source: SourceBroker, Count: 1})
	}
	for name, c := range map[string]struct {
		edit func(*Denials)
		want string
	}{
		"over the cap":          {func(d *Denials) { *d = *many }, "cap"},
		"total past the counts": {func(d *Denials) { d.Total = 8 }, "not the total"},
		"counts past the total": {func(d *Denials) { d.Total = 6 }, "not the total"},
		"record past its class": {func(d *Denials) { d.Records[1].Count = 5 }, "more than its class"},
		"record of no class":    {func(d *Denials) { d.Records[1].Family = "AF_INET6" }, "more than its class"},
		"class twice":           {func(d *Denials) { d.Counts[3] = d.Counts[2] }, "counted twice"},
		"zero count":            {func(d *Denials) { d.Records[0].Count = 0 }, "count of 0"},
		"zero class":            {func(d *Denials) { d.Counts[3].Count = 0; d.Total-- }, "count of 0"},
		"unwatched source":      {func(d *Denials) { d.Sources = d.Sources[:1] }, "did not watch"},
		"invalid rule":          {func(d *Denials) { d.Records[1].Rule = 0 }, "invalid value"},
		"no call":               {func(d *Denials) { d.Records[1].Call = "" }, "empty"},
		"unknown source":        {func(d *Denials) { d.Sources = append(d.Sources, "hearsay") }, "unknown value"},
		"NUL in the object":     {func(d *Denials) { d.Records[0].Object = "a\x00b" }, "NUL"},
		"ESC in the object":     {func(d *Denials) { d.Records[0].Object = "/ws/\x1b[2J" }, "unescaped control"},
		"RLO in the object":     {func(d *Denials) { d.Records[0].Object = "/ws/\u202etxt.exe" }, "unescaped control"},
		"counts overflow": {func(d *Denials) {
			d.Counts[0].Count, d.Counts[1].Count = 1<<63, 1<<63
		}, "overflow"},
	} {
		d := sampleDenials()
		c.edit(d)
		if err := d.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
}

// A flood of refusals whose objects differ fills the samples, never the
// counts: Unlisted says, class by class, what the samples leave out.
func TestDenialsUnlisted(t *testing.T) {
	d := sampleDenials()
	if got, want := d.Unlisted(), []uint64{0, 1, 0, 1}; !slices.Equal(got, want) {
		t.Fatalf("unlisted %v, want %v", got, want)
	}
}

// An object is text a terminal shows as it is: invalid bytes, controls
// and invisible format characters (bidi overrides and isolates,
// zero-width characters, line and paragraph separators) are escaped byte
// by byte, and what DenialObject makes passes Validate.
func TestDenialObject(t *testing.T) {
	long := strings.Repeat("é", 600) // 1,200 bytes
	for in, want := range map[string]string{
		"/ws/plain file":                   "/ws/plain file",
		"/ws/\xff\xfeé":                    `/ws/\xff\xfeé`,
		"/ws/\x1b[2Jclear\n":               `/ws/\x1b[2Jclear\x0a`,
		"/ws/back\\slash\u0085":            `/ws/back\\slash\xc2\x85`,
		"/ws/\u202egnp.exe":                `/ws/\xe2\x80\xaegnp.exe`,
		"/ws/\u2066a\u2069":                `/ws/\xe2\x81\xa6a\xe2\x81\xa9`,
		"/ws/zero\u200bwidth\u200f":        `/ws/zero\xe2\x80\x8bwidth\xe2\x80\x8f`,
		"/ws/line\u2028para\u2029":         `/ws/line\xe2\x80\xa8para\xe2\x80\xa9`,
		long:                               strings.Repeat("é", 512) + "…",
		strings.Repeat("a", 1022) + "\x1b": strings.Repeat("a", 1022) + "…",
	} {
		got := DenialObject(in)
		d := &Denials{Sources: []string{"broker"}, Total: 1,
			Counts:  []DenialCount{{Effect: EffectMetadata, Call: "chmod", Rule: RuleOutsideScope, Source: SourceBroker, Count: 1}},
			Records: []Denial{{Effect: EffectMetadata, Call: "chmod", Object: got, Rule: RuleOutsideScope, Source: SourceBroker, Count: 1}}}
		if got != want || d.Validate() != nil {
			t.Errorf("%q: %q (%v), want %q", in, got, d.Validate(), want)
		}
	}
}

// A runtime's probe of its own /proc files is one kind whatever the pid;
// every other path keeps its numbers, another process's environ too.
func TestProbePath(t *testing.T) {
	for in, want := range map[string]string{
		"/proc/458/cgroup":               "/proc/PID/cgroup",
		"/proc/458/task/459/stat":        "/proc/PID/task/TID/stat",
		"/proc/1/environ":                "/proc/1/environ",
		"/proc/1/status":                 "/proc/PID/status", // the record names no process
		"/proc/1/cmdline":                "/proc/1/cmdline",
		"/proc/458/task/459/comm":        "/proc/458/task/459/comm",
		"/proc/458/cgroup/x":             "/proc/458/cgroup/x",
		"/proc/458":                      "/proc/458",
		"/proc/4x/cgroup":                "/proc/4x/cgroup",
		"/proc/meminfo":                  "/proc/meminfo",
		"/proc/":                         "/proc/",
		"/tmp/proc/458/cgroup":           "/tmp/proc/458/cgroup",
		"/proc/458/task/x/stat":          "/proc/458/task/x/stat",
		"/proc/sys/vm/overcommit_memory": "/proc/sys/vm/overcommit_memory",
	} {
		if got := ProbePath(in); got != want {
			t.Errorf("ProbePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// The files runtimes probe, and nothing beside them: not another
// process's files, not /proc or /sys as a whole, not a device.
func TestRuntimeProbe(t *testing.T) {
	for object, want := range map[string]bool{
		"/proc/PID/cgroup":                                   true,
		"/proc/PID/maps":                                     true,
		"/proc/PID/task/TID/stat":                            true,
		"/proc/meminfo":                                      true,
		"/proc/sys/vm/overcommit_memory":                     true,
		"/proc/sys/net/core/somaxconn":                       true,
		"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size": true,
		"/sys/fs/cgroup/user.slice/cpu.max":                  true,
		"/sys/devices/system/cpu/online":                     true,
		"/proc/PID/environ":                                  false,
		"/proc/PID/task/TID/environ":                         false,
		"/proc/1/environ":                                    false,
		"/proc/1/cgroup":                                     false,
		"/proc":                                              false,
		"/proc/sys":                                          false,
		"/proc/sysrq-trigger":                                false,
		"/proc/kcore":                                        false,
		"/sys":                                               false,
		"/sys/firmware/efi/efivars/x":                        false,
		"/dev/sda":                                           false,
		"task/TID/stat":                                      false,
		"/root/.bashrc":                                      false,
	} {
		if got := RuntimeProbe(object); got != want {
			t.Errorf("RuntimeProbe(%q) = %v, want %v", object, got, want)
		}
	}
}
