package lifecycle

import (
	"bufio"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/receipt"
)

// group starts `sh -c script` as the leader of a new session and group,
// waits for it to print the pids of its children, and returns it with
// its Origin, as OnLaunch is told it.
func group(t *testing.T, script string) (*exec.Cmd, Origin, []int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the shell did not start its children: %q %v", line, err)
	}
	var kids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		kids = append(kids, pid)
		for i := 0; !strings.HasPrefix(command(pid), "sleep "); i++ { // forked, not yet exec'd
			if i == 10000 {
				t.Fatalf("child %d never became sleep: %q", pid, command(pid))
			}
			time.Sleep(time.Millisecond)
		}
	}
	// Once the shell is reaped its children are this process's (the
	// test binary is a subreaper): they are reaped too.
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for _, pid := range kids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Wait()
		for _, pid := range kids {
			syscall.Wait4(pid, nil, 0, nil)
		}
	})
	var o Origin
	if err := tellOrigin(&launcher{pid: cmd.Process.Pid}, func(got Origin) error { o = got; return nil }); err != nil {
		t.Fatal(err)
	}
	if o.Pid != cmd.Process.Pid || o.Start == 0 || o.Boot == "" {
		t.Fatalf("origin %+v", o)
	}
	return cmd, o, kids
}

// running reports whether pid is a live (not zombie) process.
func running(pid int) bool {
	m, _, err := readStat(pid)
	return err == nil && !m.zombie
}

const twoSleeps = "sleep 301 & a=$!; sleep 302 & echo $a $!; wait"

// EndOrigin ends a group whose first process is still the one recorded:
// each process is dead afterwards, checked on the host.
func TestEndOriginEndsAProvenGroup(t *testing.T) {
	cmd, o, kids := group(t, twoSleeps)
	l, found := EndOrigin("act-x", o)
	if !found || !l.Ended || l.IdentifiedBy != receipt.IdentifiedByPidStart || l.How == "" {
		t.Fatalf("%+v found %v", l, found)
	}
	for _, pid := range append([]int{cmd.Process.Pid}, kids...) {
		if !slices.Contains(l.Pids, pid) {
			t.Errorf("%d is not among the processes found: %v", pid, l.Pids)
		}
		if running(pid) {
			t.Errorf("process %d is still running", pid)
		}
	}
	if !slices.Contains(l.Commands, "sleep 301") || !slices.Contains(l.Commands, "sleep 302") {
		t.Errorf("commands %q", l.Commands)
	}
}

// A recorded pid whose start time (or boot) differs names another
// process: nothing is found and nothing is signalled.
func TestEndOriginLeavesAnotherProcessAlone(t *testing.T) {
	cmd, o, kids := group(t, twoSleeps)
	for name, other := range map[string]Origin{
		"start": {Pid: o.Pid, Start: o.Start + 1, Boot: o.Boot},
		"boot":  {Pid: o.Pid, Start: o.Start, Boot: "another-boot"},
	} {
		if l, found := EndOrigin("act-x", other); found {
			t.Errorf("%s: found %+v", name, l)
		}
	}
	for _, pid := range append([]int{cmd.Process.Pid}, kids...) {
		if !running(pid) {
			t.Errorf("process %d was ended", pid)
		}
	}
}

// When the first process is gone but its group still has members, nothing
// proves they are the action's: they are reported with their pids and
// command lines, and left running.
func TestEndOriginReportsAnUnprovenGroup(t *testing.T) {
	cmd, o, kids := group(t, twoSleeps)
	cmd.Process.Kill()
	cmd.Wait() // reaped: no process has the pid now, its group lives on
	l, found := EndOrigin("act-x", o)
	if !found || l.Ended || l.IdentifiedBy != receipt.IdentifiedByNone || l.How != "" {
		t.Fatalf("%+v found %v", l, found)
	}
	slices.Sort(l.Pids)
	slices.Sort(kids)
	if !slices.Equal(l.Pids, kids) || !slices.Contains(l.Commands, "sleep 301") {
		t.Fatalf("reported %v %q, want %v", l.Pids, l.Commands, kids)
	}
	for _, pid := range kids {
		if !running(pid) {
			t.Errorf("unproven process %d was ended", pid)
		}
	}
}
