package lifecycle

import (
	"reflect"
	"testing"
)

func pids(ms []member) []int {
	out := []int{}
	for _, m := range ms {
		out = append(out, m.pid)
	}
	return out
}

func TestClassify(t *testing.T) {
	// 100 is the root (a zombie; its pid is the group id). 101 and 102
	// are in its group, 101 orphaned by the root's exit; 103, a child of
	// 101, called setsid, and 104 is 103's child in 103's new group; 105
	// stayed in the group but was orphaned to launchd (1). 200 and 201 are
	// unrelated, 201 in a group whose id equals member 101's pid.
	table := []proc{
		{pid: 1, ppid: 0, pgid: 1},
		{pid: 100, ppid: 50, pgid: 100, zombie: true},
		{pid: 101, ppid: 1, pgid: 100},
		{pid: 102, ppid: 101, pgid: 100, zombie: true},
		{pid: 103, ppid: 101, pgid: 103},
		{pid: 104, ppid: 103, pgid: 103},
		{pid: 105, ppid: 1, pgid: 100},
		{pid: 200, ppid: 1, pgid: 200},
		{pid: 201, ppid: 200, pgid: 101},
	}
	group, leavers := classify(table, 100)
	if got, want := pids(group), []int{101, 102, 105}; !reflect.DeepEqual(got, want) {
		t.Errorf("group = %v, want %v", got, want)
	}
	if got, want := pids(leavers), []int{103, 104}; !reflect.DeepEqual(got, want) {
		t.Errorf("leavers = %v, want %v", got, want)
	}
	if !group[1].zombie || group[1].ppid != 101 {
		t.Errorf("member 102 = %+v, want a zombie child of 101", group[1])
	}
}

func TestClassifyNothingLeft(t *testing.T) {
	table := []proc{{pid: 1, ppid: 0, pgid: 1}, {pid: 100, ppid: 50, pgid: 100, zombie: true}, {pid: 7, ppid: 1, pgid: 7}}
	group, leavers := classify(table, 100)
	if len(group) != 0 || len(leavers) != 0 {
		t.Fatalf("group %v leavers %v, want none: only the root zombie remains", pids(group), pids(leavers))
	}
}

// A torn snapshot can hold a parent loop; the walk must still end and
// report each process once.
func TestClassifyLoop(t *testing.T) {
	table := []proc{
		{pid: 100, ppid: 50, pgid: 100},
		{pid: 300, ppid: 301, pgid: 300},
		{pid: 301, ppid: 300, pgid: 300},
		{pid: 302, ppid: 100, pgid: 302},
		{pid: 300, ppid: 302, pgid: 300},
	}
	_, leavers := classify(table, 100)
	if got, want := pids(leavers), []int{302, 300, 301}; !reflect.DeepEqual(got, want) {
		t.Fatalf("leavers = %v, want %v", got, want)
	}
}
