package lifecycle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warrant/receipt"
)

// endBound bounds how long EndLeftovers tries to empty one action's
// cgroups.
const endBound = 5 * time.Second

// maxCommand bounds each command line a Leftover records.
const maxCommand = 256

// EndLeftovers removes the empty action cgroups a previous broker left
// (it died before removing them), and ends the processes in the
// populated ones. Membership is the proof of identity: only this broker's
// directory for its state directory holds them, named by the action, and
// no process can leave a cgroup on its own (the policy does not reach
// cgroupfs). Each is ended by cgroup.kill, or with cgroup v1 alone by
// SIGKILL to each listed member re-checked through a pidfd, until the
// cgroups are empty or endBound passes.
func (c *Cgroups) EndLeftovers() ([]Leftover, error) {
	ids, err := c.leftoverIDs()
	var out []Leftover
	for _, id := range ids {
		a := c.existing(id)
		if populated, perr := a.populated(); perr != nil || !populated {
			a.remove()
			continue
		}
		if isSlot(id) {
			// A dead broker's warm launcher, never sent a request (a taken
			// slot's processes were ended under the handle, which sorts first).
			a.end()
			a.remove()
			continue
		}
		l := Leftover{ID: id, Where: a.where(), How: a.how(), IdentifiedBy: receipt.IdentifiedByCgroup}
		l.Pids = a.members()
		l.Commands = commands(l.Pids)
		l.Ended = a.end()
		if l.Ended {
			a.remove()
		} else {
			l.Pids = a.members() // what is left
		}
		out = append(out, l)
	}
	return out, err
}

// leftoverIDs lists the action cgroups in every directory of this broker.
func (c *Cgroups) leftoverIDs() ([]string, error) {
	var ids []string
	var firstErr error
	for _, d := range []string{c.dir, c.mem, c.pids} {
		if d == "" {
			continue
		}
		entries, err := os.ReadDir(d)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("list %s: %w", d, err)
		}
		for _, e := range entries {
			if e.IsDir() && !slices.Contains(ids, e.Name()) {
				ids = append(ids, e.Name())
			}
		}
	}
	slices.Sort(ids)
	return ids, firstErr
}

// existing is the action cgroup id as it exists now, in each directory.
func (c *Cgroups) existing(id string) *actionCgroup {
	a := &actionCgroup{fd: -1, v2: c.v2}
	for _, p := range []struct {
		parent string
		into   *string
	}{{c.dir, &a.dir}, {c.mem, &a.mem}, {c.pids, &a.pids}} {
		if d := filepath.Join(p.parent, id); p.parent != "" && exists(d) {
			*p.into = d
		}
	}
	return a
}

func (a *actionCgroup) where() string {
	var ds []string
	for _, d := range []string{a.dir, a.mem, a.pids} {
		if d != "" {
			ds = append(ds, d)
		}
	}
	return strings.Join(ds, ", ")
}

func (a *actionCgroup) how() string {
	if a.dir != "" {
		return "cgroup.kill"
	}
	return "SIGKILL to each process listed in its cgroup v1 cgroup.procs, re-checked through a pidfd, until none was left"
}

// end kills until nothing is left or endBound passes.
func (a *actionCgroup) end() bool {
	deadline := time.Now().Add(endBound)
	pause := time.Millisecond
	for {
		a.kill()
		time.Sleep(pause)
		if populated, err := a.populated(); err == nil && !populated {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// command is a process's command line, NULs as spaces, bounded; "" when
// it cannot be read.
func command(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) > maxCommand {
		b = append(b[:maxCommand-3], "..."...)
	}
	return strings.ToValidUTF8(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), "?")
}
