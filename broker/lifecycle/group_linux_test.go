package lifecycle

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command name may hold spaces and parentheses; fields are counted from
// the last ')'. A line cut short is refused, not misread.
func TestParseStat(t *testing.T) {
	const tail = " 0 -1 4194560 104 0 0 0 0 0 0 0 20 0 1 0 %s 2506752 205 18446744073709551615\n"
	for _, c := range []struct {
		line      string
		ok        bool
		ppid, grp int
		start     uint64
		zombie    bool
	}{
		{"42 (sleep) S 7 42 42" + fmt.Sprintf(tail, "123456"), true, 7, 42, 123456, false},
		{"43 (a) b (c)) Z 1 9 9" + fmt.Sprintf(tail, "9"), true, 1, 9, 9, true},
		{"44 ( ) X 2 3 3" + fmt.Sprintf(tail, "18446744073709551615"), true, 2, 3, 1<<64 - 1, true},
		{"45 (x) S 7", false, 0, 0, 0, false},
		{"46 (x) S seven 46 46" + fmt.Sprintf(tail, "1"), false, 0, 0, 0, false},
		{"47 no parenthesis S 1 47 47" + fmt.Sprintf(tail, "1"), false, 0, 0, 0, false},
		{"48 (x) S 1 48 48" + fmt.Sprintf(tail, "-1"), false, 0, 0, 0, false},
		{"49 (x) S 1 49 49 0 -1 4194560 104 0 0 0 0 0 0 0 20 0 1 0 77", false, 0, 0, 0, false}, // cut after starttime
	} {
		m, grp, ok := parseStat(1, []byte(c.line))
		if ok != c.ok || (ok && (m.ppid != c.ppid || grp != c.grp || m.start != c.start || m.zombie != c.zombie)) {
			t.Errorf("%q: %+v group %d ok %v", c.line, m, grp, ok)
		}
	}
}

// groupMembers finds, in the real /proc, the members of a process group
// other than its leader, and nothing of any other group.
func TestGroupMembersFindsTheGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & echo ready; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("the shell did not start its children: %q %v", buf, err)
	}
	pgid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms, err := groupMembers(pgid)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range ms {
			if m.ppid != pgid || m.zombie {
				t.Fatalf("member %+v is not a live child of the leader %d", m, pgid)
			}
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(m.pid) + "/comm")
			got = append(got, strings.TrimSpace(string(b)))
		}
		if strings.Join(got, " ") == "sleep sleep" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %d: members %v, want the two sleeps", pgid, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
