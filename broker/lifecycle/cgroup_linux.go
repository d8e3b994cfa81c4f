package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Cgroups are this broker's cgroup directories, one in each hierarchy it
// uses; every action gets a child named by its handle in each of them.
//
//   - dir is in the cgroup v2 hierarchy: the launcher is started in the
//     action's child with CLONE_INTO_CGROUP, cgroup.kill ends it and
//     cgroup.events confirms it gone. Where the memory or pids
//     controller is delegated to this broker, it is enabled for the
//     children (v2) and the action's limit is set there.
//   - mem and pids are in the cgroup v1 memory and pids hierarchies, for
//     a controller that lives there (hybrid hosts): the launcher is born
//     in the action's child, forked by a thread that moved itself there
//     (inside), or else its pid is written into it, before the broker
//     sends its request, so nothing of it runs outside them.
type Cgroups struct {
	dir       string   // cgroup v2; "" when none is writable
	v2        []string // controllers enabled for the actions in dir
	mem, pids string   // cgroup v1; "" when not used
	swap      bool     // the swap knob exists: swap is bounded with memory
	enf       Enforcement
	sp        *spares       // spare v1 directories and background removals (spare_linux.go)
	mounts    *cgroupMounts // the hierarchies' mounts as found, for a thread's way back (inside)
}

// DetectCgroups finds this process's cgroups and creates
// "warrant/<scope>" in each hierarchy it can use; scope names one broker
// (one state directory), so that brokers of different state directories
// never see each other's actions. For each of the memory and pids
// controllers it takes, in order: the controller delegated to this
// process's cgroup v2 subtree (enabled for the children in
// cgroup.subtree_control), the controller's cgroup v1 hierarchy under
// this process's own cgroup there or, failing that, its root; else the
// limit is not enforced and Enforcement says why. It returns an error
// only when no hierarchy at all is usable; the broker then supervises by
// process group alone and says so.
func DetectCgroups(scope string) (*Cgroups, error) {
	checkName("scope", scope)
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	mounts := parseMounts(info)
	c, err := mounts.in(self).detect(scope)
	if c != nil {
		c.mounts = mounts
	}
	return c, err
}

// checkName panics unless name can be one path element of a cgroup.
func checkName(what, name string) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		panic(fmt.Sprintf("lifecycle: internal error: %s %q cannot name a cgroup", what, name))
	}
}

// Enforcement is how this broker's actions get their memory and
// process-count limits.
func (c *Cgroups) Enforcement() Enforcement { return c.enf }

// Describe names every directory in use and what it does: the probe
// binds its report to it.
func (c *Cgroups) Describe() string {
	var parts []string
	if c.dir != "" {
		v2 := "v2 " + c.dir + " (cgroup.kill, cgroup.events"
		for _, ctl := range c.v2 {
			v2 += ", " + ctl
		}
		parts = append(parts, v2+")")
	}
	if c.mem != "" {
		parts = append(parts, "v1 memory "+c.mem)
	}
	if c.pids != "" {
		parts = append(parts, "v1 pids "+c.pids)
	}
	return strings.Join(parts, "; ")
}

// Dirs lists this broker's cgroup directories, one per hierarchy in use.
func (c *Cgroups) Dirs() []string {
	var out []string
	for _, d := range []string{c.dir, c.mem, c.pids} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Dir is this broker's cgroup v2 directory, or "" when it has none.
func (c *Cgroups) Dir() string { return c.dir }

// Remove waits for the background work on action directories, removes
// the spares, and deletes this broker's cgroup directories, and the
// "warrant" directories above them, where no action cgroup (or other
// broker) is left in them.
func (c *Cgroups) Remove() {
	c.quiesce()
	for _, d := range []string{c.dir, c.mem, c.pids} {
		if d != "" && os.Remove(d) == nil {
			os.Remove(filepath.Dir(d))
		}
	}
}
