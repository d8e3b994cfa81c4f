package lifecycle

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"warrant/receipt"
)

// bootID is this boot's random id: an Origin of another boot names no
// process that can still be running.
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read this boot's id: %w", err)
	}
	return string(bytes.TrimSpace(b)), nil
})

// tellOrigin gives the launcher's Origin to fn, if fn is set: the one a
// warm launcher's slot read when it was made, or pid's, read now.
func tellOrigin(l *launcher, fn func(Origin) error) error {
	if fn == nil {
		return nil
	}
	o := l.origin
	if o == nil {
		read, err := readOrigin(l.pid)
		if err != nil {
			return err
		}
		o = &read
	}
	return fn(*o)
}

// readOrigin reads pid's Origin: its start time never changes, so it can
// be read as soon as the process exists.
func readOrigin(pid int) (Origin, error) {
	boot, err := bootID()
	if err != nil {
		return Origin{}, err
	}
	m, _, err := readStat(pid)
	if err != nil {
		return Origin{}, fmt.Errorf("read the launcher's start time: %w", err)
	}
	return Origin{Pid: pid, Start: m.start, Boot: boot}, nil
}

// readStat reads and parses /proc/PID/stat.
func readStat(pid int) (member, int, error) {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return member{}, 0, err
	}
	m, pgrp, ok := parseStat(pid, b)
	if !ok {
		return member{}, 0, fmt.Errorf("/proc/%d/stat: cannot parse %q", pid, b)
	}
	return m, pgrp, nil
}

// EndOrigin ends what is left of the action id, whose first process was
// o, after the broker that started it died without a cgroup to find its
// processes by. The action's processes cannot leave its process group
// (the launcher's seccomp policy denies setsid and setpgid), whose id is
// o.Pid; a group id cannot be reused while its first process lives, and
// that process is still o's while the pid's start time is o.Start in
// boot o.Boot. So:
//
//   - If that process is still o's, it is stopped through a pidfd (it
//     forks nothing more), every other member of its group is sent
//     SIGKILL through a pidfd opened before its group was re-read, until
//     none is left or endBound passes; then the first process is killed
//     and its exit awaited. IdentifiedBy is pid-start.
//   - If the pid now belongs to another process, or o is of another boot,
//     the group ended before the pid was reused: nothing is found.
//   - If no process has the pid but its group still has members, nothing
//     proves they are the action's (the group may have ended and its id
//     been reused): they are reported with their pids and command lines,
//     not ended. IdentifiedBy is none.
//
// It returns false when nothing of the action was found running.
func EndOrigin(id string, o Origin) (Leftover, bool) {
	l := Leftover{ID: id, Where: fmt.Sprintf("process group %d", o.Pid)}
	if boot, err := bootID(); err == nil && boot != o.Boot {
		return l, false
	}
	leader, err := unix.PidfdOpen(o.Pid, 0)
	if err == nil {
		defer unix.Close(leader)
		m, _, err := readStat(o.Pid)
		switch {
		case err == nil && m.start == o.Start:
			return endProven(l, o, leader, !m.zombie)
		case err == nil:
			return l, false // the pid was reused: the group had ended
		}
	}
	left := liveMembers(o)
	if len(left) == 0 {
		return l, false
	}
	l.IdentifiedBy = receipt.IdentifiedByNone
	l.Pids, l.Commands = left, commands(left)
	return l, true
}

// endProven ends group o.Pid while its first process, held by the pidfd
// leader (alive unless it is a zombie), is proven o's.
func endProven(l Leftover, o Origin, leader int, alive bool) (Leftover, bool) {
	found := liveMembers(o)
	if alive {
		found = append([]int{o.Pid}, found...)
	}
	if len(found) == 0 {
		return l, false
	}
	l.IdentifiedBy = receipt.IdentifiedByPidStart
	l.Pids, l.Commands = found, commands(found)
	l.How = fmt.Sprintf("SIGKILL through a pidfd to each process of group %d, its first process stopped first and identified by its pid and start time (tick %d of this boot), then to that process", o.Pid, o.Start)
	unix.PidfdSendSignal(leader, unix.SIGSTOP, nil, 0)
	deadline := time.Now().Add(endBound)
	pause := time.Millisecond
	for {
		ms := liveMembers(o)
		if len(ms) == 0 || time.Now().After(deadline) {
			break
		}
		for _, pid := range ms {
			killIfInGroup(pid, o.Pid)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	unix.PidfdSendSignal(leader, unix.SIGKILL, nil, 0)
	fds := []unix.PollFd{{Fd: int32(leader), Events: unix.POLLIN}}
	for ms := int(time.Until(deadline).Milliseconds()); ms > 0; ms = int(time.Until(deadline).Milliseconds()) {
		if n, err := unix.Poll(fds, ms); n > 0 || (err != nil && err != unix.EINTR) {
			break
		}
	}
	l.Pids = liveMembers(o)
	if m, _, err := readStat(o.Pid); err == nil && m.start == o.Start && !m.zombie {
		l.Pids = append([]int{o.Pid}, l.Pids...)
	}
	l.Ended = len(l.Pids) == 0
	if l.Ended {
		l.Pids = found
	}
	return l, true
}

// killIfInGroup sends SIGKILL to pid through a pidfd, if after the pidfd
// was opened the process is still in group pgid: a pid freed and reused
// in between names another process, which the pidfd never reaches.
func killIfInGroup(pid, pgid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if _, pgrp, err := readStat(pid); err == nil && pgrp == pgid {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

// liveMembers lists the members of group o.Pid but its first process
// that are not zombies and started no earlier than it.
func liveMembers(o Origin) []int {
	ms, _ := groupMembers(o.Pid)
	var pids []int
	for _, m := range ms {
		if !m.zombie && m.start >= o.Start {
			pids = append(pids, m.pid)
		}
	}
	return pids
}

func commands(pids []int) []string {
	out := make([]string, len(pids))
	for i, p := range pids {
		out[i] = command(p)
	}
	return out
}
