package lifecycle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/internal/profile"
)

// actionCgroup is one action's cgroups: its v2 directory, open for
// CLONE_INTO_CGROUP, and its v1 memory and pids directories.
type actionCgroup struct {
	dir       string // v2; "" when none
	fd        int    // dir, O_PATH; -1 when none
	mem, pids string // v1; "" when not used
	v2        []string
	mounts    *cgroupMounts // where the broker's cgroups were found, for a thread's way back (inside)
}

// create makes the action's cgroups with lim's memory and process-count
// limits set, before anything is started in them. On error nothing is
// left behind.
func (c *Cgroups) create(id string, lim profile.Limits) (_ *actionCgroup, err error) {
	checkName("action id", id)
	a := &actionCgroup{fd: -1, v2: c.v2, mounts: c.mounts}
	defer func() {
		if err != nil {
			a.remove()
		}
	}()
	memory, pids := strconv.FormatUint(lim.Memory, 10), strconv.FormatUint(lim.Pids, 10)
	if c.dir != "" {
		if a.dir, err = mkdirCgroup(c.dir, id); err != nil {
			return nil, err
		}
		if slices.Contains(c.v2, "memory") {
			err = writeKnob(a.dir, "memory.max", memory)
			if err == nil && exists(filepath.Join(a.dir, "memory.swap.max")) {
				err = writeKnob(a.dir, "memory.swap.max", "0") // memory.max is all it gets
			}
		}
		if err == nil && slices.Contains(c.v2, "pids") {
			err = writeKnob(a.dir, "pids.max", pids)
		}
		if err != nil {
			return nil, err
		}
		if a.fd, err = unix.Open(a.dir, unix.O_DIRECTORY|unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("open cgroup %s: %w", a.dir, err)
		}
	}
	if (c.mem != "" || c.pids != "") && !c.takeSpare(a, id, lim) {
		if err = c.createV1(a, id, lim); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// createV1 makes a's cgroup v1 memory and pids directories, named name,
// with lim's limits. On error a may hold some of them: the caller removes
// a.
func (c *Cgroups) createV1(a *actionCgroup, name string, lim profile.Limits) (err error) {
	memory, pids := strconv.FormatUint(lim.Memory, 10), strconv.FormatUint(lim.Pids, 10)
	if c.mem != "" {
		if a.mem, err = mkdirCgroup(c.mem, name); err != nil {
			return err
		}
		// memsw bounds memory and swap together; it may not be set below
		// the memory limit, so it comes second.
		err = writeKnob(a.mem, "memory.limit_in_bytes", memory)
		if err == nil && exists(filepath.Join(a.mem, "memory.memsw.limit_in_bytes")) {
			err = writeKnob(a.mem, "memory.memsw.limit_in_bytes", memory)
		}
		if err != nil {
			return err
		}
	}
	if c.pids != "" {
		if a.pids, err = mkdirCgroup(c.pids, name); err != nil {
			return err
		}
		return writeKnob(a.pids, "pids.max", pids)
	}
	return nil
}

// mkdirCgroup makes the cgroup parent/name.
func mkdirCgroup(parent, name string) (string, error) {
	d := filepath.Join(parent, name)
	err := os.Mkdir(d, 0o755)
	if errors.Is(err, os.ErrNotExist) {
		// Someone removed this broker's empty directory; in cgroup v2 it
		// comes back without the controllers, and the limits' knobs are
		// then missing: the action is refused.
		if err = os.MkdirAll(parent, 0o755); err == nil {
			err = os.Mkdir(d, 0o755)
		}
	}
	if err != nil {
		return "", fmt.Errorf("create cgroup %s: %w", d, err)
	}
	return d, nil
}

// v1 lists the action's cgroup v1 directories.
func (a *actionCgroup) v1() []string {
	var out []string
	for _, d := range []string{a.pids, a.mem} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// place moves the launcher (pid) into the action's v1 cgroups, where it
// could not be born in them (inside). It runs before the request is
// sent: until it reads its request the launcher does nothing but wait,
// so nothing of the action runs outside them. Its v2 cgroup it was
// started in.
func (a *actionCgroup) place(pid int) error {
	for _, d := range a.v1() {
		if err := writeKnob(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// kill sends SIGKILL to every process of the action at once
// (cgroup.kill), or, with cgroup v1 alone, to each one listed in its
// cgroups (killListed); the caller repeats until none is left.
func (a *actionCgroup) kill() {
	if a.dir != "" {
		os.WriteFile(filepath.Join(a.dir, "cgroup.kill"), []byte("1"), 0)
		return
	}
	a.killListed()
}

// killListed sends SIGKILL to each process listed in the action's v1
// cgroups, each through a pidfd taken before its pid is seen listed
// again: a pid that was freed and reused by a process outside the action
// in between is not listed the second time, and the pidfd never reaches
// another process than the one it was opened for. It returns how many
// were signalled.
func (a *actionCgroup) killListed() int {
	n := 0
	for _, d := range a.v1() {
		first, err := readPids(filepath.Join(d, "cgroup.procs"))
		if err != nil || len(first) == 0 {
			continue
		}
		fds := make(map[int]int, len(first))
		for _, pid := range first {
			if fd, err := unix.PidfdOpen(pid, 0); err == nil {
				fds[pid] = fd
			}
		}
		again, _ := readPids(filepath.Join(d, "cgroup.procs"))
		for pid, fd := range fds {
			if slices.Contains(again, pid) && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				n++
			}
			unix.Close(fd)
		}
	}
	return n
}

// populated reports whether any process of the action is left: by
// cgroup.events in v2, by an empty cgroup.procs in v1 (which lists no
// exited process, zombies included).
func (a *actionCgroup) populated() (bool, error) {
	if a.dir != "" {
		ev, err := readFile(filepath.Join(a.dir, "cgroup.events"))
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(ev), "\n") {
			if v, ok := strings.CutPrefix(line, "populated "); ok {
				return v != "0", nil
			}
		}
		return false, errors.New("cgroup.events has no populated line")
	}
	for _, d := range a.v1() {
		procs, err := readPids(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			return false, err
		}
		if len(procs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// evidence names how populated was read.
func (a *actionCgroup) evidence() string {
	if a.dir != "" {
		return "cgroup.events says populated 0"
	}
	return "the cgroup v1 cgroup.procs lists no process"
}

// members lists the pids in the action's cgroups.
func (a *actionCgroup) members() []int {
	var pids []int
	for _, d := range append([]string{a.dir}, a.v1()...) {
		if d == "" {
			continue
		}
		got, _ := readPids(filepath.Join(d, "cgroup.procs"))
		for _, p := range got {
			if !slices.Contains(pids, p) {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// usage reads what the action's limits counted.
func (a *actionCgroup) usage() *Usage {
	u := &Usage{}
	switch {
	case slices.Contains(a.v2, "memory"):
		u.OOMKills = keyed(filepath.Join(a.dir, "memory.events"), "oom_kill")
		u.MemoryPeak = number(filepath.Join(a.dir, "memory.peak"))
	case a.mem != "":
		u.OOMKills = keyed(filepath.Join(a.mem, "memory.oom_control"), "oom_kill")
		u.MemoryPeak = number(filepath.Join(a.mem, "memory.max_usage_in_bytes"))
	}
	pids := a.pids
	if slices.Contains(a.v2, "pids") {
		pids = a.dir
	}
	if pids != "" {
		u.PidsLimitHits = keyed(filepath.Join(pids, "pids.events"), "max")
		u.PidsPeak = number(filepath.Join(pids, "pids.peak"))
	}
	return u
}

// keyed reads the value of key from a flat-keyed cgroup file ("key N"
// lines); 0 when it is not there.
func keyed(path, key string) uint64 {
	b, err := readFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// number reads a single-value cgroup file; 0 when it is not there.
func number(path string) uint64 {
	b, err := readFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// remove deletes the action's cgroups. One that still has members
// cannot be removed; it stays for the next broker to find.
func (a *actionCgroup) remove() {
	if a.fd >= 0 {
		unix.Close(a.fd)
		a.fd = -1
	}
	for _, d := range []string{a.dir, a.mem, a.pids} {
		if d != "" {
			os.Remove(d)
		}
	}
}
