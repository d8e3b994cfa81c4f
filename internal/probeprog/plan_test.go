package probeprog

import (
	"reflect"
	"testing"
)

func TestPlanArgsRoundTrip(t *testing.T) {
	for _, p := range []Plan{
		{Who: Target, Outside: "/tmp/out", TCPPort: 40001, UDPPort: 40002, Abstract: "warrant-probe-1",
			MarkerPID: 4242, LeakFD: 9, LeakID: "2049:1234", Canaries: []string{"CANARY_A", "CANARY_B"},
			Runtime: "/usr/bin/env"},
		{Who: Grandchild, Outside: "/o", Runtime: "/usr/bin/env"},
	} {
		got, err := ParsePlan(p.Args())
		if err != nil {
			t.Fatalf("%s: %v", p.Who, err)
		}
		if !reflect.DeepEqual(*got, p) {
			t.Errorf("round trip: got %+v, want %+v", *got, p)
		}
	}
}

func TestParsePlanRefuses(t *testing.T) {
	good := (&Plan{Who: Child, Outside: "/o", Runtime: "/usr/bin/env"}).Args()
	for name, mutate := range map[string]func([]string) []string{
		"too few":           func(a []string) []string { return a[:9] },
		"too many":          func(a []string) []string { return append(a, "x") },
		"unknown who":       func(a []string) []string { a[0] = "parent"; return a },
		"port not a number": func(a []string) []string { a[2] = "80x"; return a },
		"fd not a number":   func(a []string) []string { a[6] = ""; return a },
	} {
		args := mutate(append([]string(nil), good...))
		if p, err := ParsePlan(args); err == nil {
			t.Errorf("%s: accepted as %+v", name, p)
		}
	}
}

// A line that is not "WHO CHECK done|failed [DETAIL]" is dropped, so the
// check it would have reported fails for want of a line.
func TestParseLines(t *testing.T) {
	out := "target read_input done hello world\n" +
		"grandchild tcp_connect failed errno ECONNREFUSED\n" +
		"target write_outside\n" +
		"target read_secret succeeded\n" +
		"garbage\n\n" +
		"child spawn_child done"
	want := []Line{
		{Who: Target, Check: ReadInput, Done: true, Detail: "hello world"},
		{Who: Grandchild, Check: TCPConnect, Detail: "errno ECONNREFUSED"},
		{Who: Child, Check: SpawnChild, Done: true},
	}
	if got := ParseLines(out); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseLines:\n got %+v\nwant %+v", got, want)
	}
}
