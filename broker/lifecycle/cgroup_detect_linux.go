package lifecycle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The controllers whose limits the broker sets.
var limitControllers = []string{"memory", "pids"}

// cgroupHost is what the kernel says of this process's cgroups: where
// each hierarchy is mounted and this process's path in it, relative to
// the mount's own root.
type cgroupHost struct {
	v2Mount, v2Self string            // "" when no cgroup2 is mounted
	v1Mount, v1Self map[string]string // by controller (memory, pids)
	v1Outside       map[string]bool   // by controller: the path is not below the mount's root (v1Self is then "/")
}

// cgroupMounts is where each hierarchy is mounted, as mountinfo says,
// and the root of the hierarchy each mount shows.
type cgroupMounts struct {
	v2Mount string
	v1Mount map[string]string // by controller (memory, pids)
	roots   map[string]string // by controller, "" for v2
}

// v1Dir is the directory of the cgroup v1 hierarchy of ctl that holds
// the process (or thread) h was read for.
func (h *cgroupHost) v1Dir(ctl string) string {
	return filepath.Join(h.v1Mount[ctl], filepath.Clean("/"+h.v1Self[ctl]))
}

// parseHost reads /proc/self/mountinfo and /proc/self/cgroup.
func parseHost(mountinfo, self []byte) *cgroupHost { return parseMounts(mountinfo).in(self) }

// parseMounts reads /proc/self/mountinfo.
func parseMounts(mountinfo []byte) *cgroupMounts {
	m := &cgroupMounts{v1Mount: map[string]string{}, roots: map[string]string{}}
	for line := range strings.Lines(string(mountinfo)) {
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		f, p := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(p) < 3 {
			continue
		}
		switch p[0] {
		case "cgroup2":
			if m.v2Mount == "" {
				m.v2Mount, m.roots[""] = f[4], f[3]
			}
		case "cgroup":
			for _, opt := range strings.Split(p[2], ",") {
				if slices.Contains(limitControllers, opt) && m.v1Mount[opt] == "" {
					m.v1Mount[opt], m.roots[opt] = f[4], f[3]
				}
			}
		}
	}
	return m
}

// in reads a /proc/<pid>/cgroup (or thread-self) under these mounts. A
// mount whose root is not "/" (a container's bind of its own subtree)
// holds the path with that root cut off.
func (m *cgroupMounts) in(self []byte) *cgroupHost {
	h := &cgroupHost{v2Mount: m.v2Mount, v1Mount: m.v1Mount, v1Self: map[string]string{}, v1Outside: map[string]bool{}}
	within := func(path, root string) (string, bool) {
		if root == "/" || root == "" {
			return path, true
		}
		if rest, ok := strings.CutPrefix(path, root); ok && (rest == "" || rest[0] == '/') {
			return "/" + strings.TrimPrefix(rest, "/"), true
		}
		return "/", false // this process's cgroup is not below the mount: only its root is reachable
	}
	for line := range strings.Lines(string(self)) {
		id, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		ctls, path, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 {
			continue
		}
		if id == "0" && ctls == "" {
			h.v2Self, _ = within(path, m.roots[""])
			continue
		}
		for _, c := range strings.Split(ctls, ",") {
			if slices.Contains(limitControllers, c) {
				var below bool
				h.v1Self[c], below = within(path, m.roots[c])
				h.v1Outside[c] = !below
			}
		}
	}
	return h
}

// detect creates this broker's directories and decides, controller by
// controller, what enforces each limit.
func (h *cgroupHost) detect(scope string) (*Cgroups, error) {
	c := &Cgroups{sp: newSpares()}
	var v2err error
	base := ""
	if h.v2Mount == "" || h.v2Self == "" {
		v2err = errors.New("no cgroup v2 hierarchy is mounted")
	} else {
		base = filepath.Join(h.v2Mount, filepath.Clean("/"+h.v2Self))
		if c.dir, v2err = makeTree(base, scope); v2err == nil {
			if _, err := os.Stat(filepath.Join(c.dir, "cgroup.kill")); err != nil {
				c.dir, v2err = "", fmt.Errorf("cgroup %s has no cgroup.kill: %w", c.dir, err)
			}
		}
	}
	var missing []string
	for _, ctl := range limitControllers {
		m, why := c.controller(h, base, scope, ctl)
		if ctl == "memory" {
			c.enf.Memory = m
		} else {
			c.enf.Pids = m
		}
		if m == Unenforced {
			missing = append(missing, why)
		}
	}
	c.enf.Swap = c.swap
	if len(missing) > 0 {
		c.enf.Missing = strings.Join(missing, "; ") + ". To get them, give the broker a cgroup v2 subtree with the memory and pids controllers delegated: " + Delegate + "."
	}
	if c.dir == "" && c.mem == "" && c.pids == "" {
		return nil, fmt.Errorf("%v; %s", v2err, strings.Join(missing, "; "))
	}
	return c, nil
}

// controller takes ctl from the v2 subtree or its v1 hierarchy, and
// returns what enforces it or why nothing does.
func (c *Cgroups) controller(h *cgroupHost, base, scope, ctl string) (Mechanism, string) {
	var v2why string
	switch avail, err := os.ReadFile(filepath.Join(base, "cgroup.controllers")); {
	case c.dir == "":
		v2why = "no cgroup v2 directory is writable by this broker"
	case err != nil:
		v2why = err.Error()
	case !slices.Contains(strings.Fields(string(avail)), ctl):
		v2why = fmt.Sprintf("the cgroup v2 subtree %s has no %s controller delegated", base, ctl)
	default:
		if err := enableV2(base, scope, ctl); err != nil {
			v2why = err.Error()
			break
		}
		c.v2 = append(c.v2, ctl)
		if ctl == "memory" {
			c.swap = exists(filepath.Join(c.dir, "memory.swap.max")) || noSwap()
		}
		return CgroupV2, ""
	}
	mnt := h.v1Mount[ctl]
	if mnt == "" {
		return Unenforced, fmt.Sprintf("%s is not limited: %s, and no cgroup v1 %s hierarchy is mounted", ctl, v2why, ctl)
	}
	knob := map[string]string{"memory": "memory.limit_in_bytes", "pids": "pids.max"}[ctl]
	var errs []string
	for _, cand := range slices.Compact([]string{h.v1Dir(ctl), mnt}) {
		dir, err := makeTree(cand, scope)
		if err == nil && !exists(filepath.Join(dir, knob)) {
			err = fmt.Errorf("%s has no %s", dir, knob)
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if ctl == "memory" {
			c.mem = dir
			c.swap = exists(filepath.Join(dir, "memory.memsw.limit_in_bytes")) || noSwap()
		} else {
			c.pids = dir
		}
		return CgroupV1, ""
	}
	return Unenforced, fmt.Sprintf("%s is not limited: %s, and the cgroup v1 %s hierarchy is not writable (%s)",
		ctl, v2why, ctl, strings.Join(errs, "; "))
}

// makeTree creates base/warrant/scope (each may exist) and returns it.
// Another broker's Remove may take an empty base/warrant away between the
// two steps; then they are tried again.
func makeTree(base, scope string) (string, error) {
	dir := filepath.Join(base, "warrant")
	var err error
	for range 3 {
		if err = os.Mkdir(dir, 0o755); err == nil || errors.Is(err, os.ErrExist) {
			if err = os.Mkdir(filepath.Join(dir, scope), 0o755); err == nil || errors.Is(err, os.ErrExist) {
				return filepath.Join(dir, scope), nil
			}
		}
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	return "", fmt.Errorf("create cgroup %s: %w", filepath.Join(dir, scope), err)
}

// enableV2 enables ctl for the children of base, base/warrant and
// base/warrant/scope. A cgroup other than the root cannot give a
// controller to its children while it holds processes itself; when
// base's only process is this broker, the broker moves itself into the
// leaf base/warrant-broker first (and stays there).
func enableV2(base, scope string, ctl string) error {
	for i, d := range []string{base, filepath.Join(base, "warrant"), filepath.Join(base, "warrant", scope)} {
		err := enableIn(d, ctl)
		if i == 0 && errors.Is(err, unix.EBUSY) {
			if err = moveSelfToLeaf(base); err == nil {
				err = enableIn(d, ctl)
			}
		}
		if err != nil {
			return fmt.Errorf("the %s controller of %s cannot be enabled for this broker's actions: %w", ctl, base, err)
		}
	}
	return nil
}

func enableIn(dir, ctl string) error {
	have, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err == nil && slices.Contains(strings.Fields(string(have)), ctl) {
		return nil
	}
	return writeKnob(dir, "cgroup.subtree_control", "+"+ctl)
}

// moveSelfToLeaf moves this process into base/warrant-broker, when it is
// the only process in base.
func moveSelfToLeaf(base string) error {
	procs, err := readPids(filepath.Join(base, "cgroup.procs"))
	if err != nil {
		return err
	}
	if len(procs) != 1 || procs[0] != os.Getpid() {
		return fmt.Errorf("cgroup %s holds %d other process(es), so it cannot give its controllers to children; run the broker alone in it", base, len(procs)-1)
	}
	leaf := filepath.Join(base, "warrant-broker")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create cgroup %s: %w", leaf, err)
	}
	return writeKnob(leaf, "cgroup.procs", strconv.Itoa(os.Getpid()))
}

// noSwap reports whether the host has no swap at all, so that memory
// alone bounds an action whatever the swap knobs.
func noSwap() bool {
	b, err := os.ReadFile("/proc/swaps")
	return err == nil && strings.Count(string(b), "\n") <= 1
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeKnob writes value to a cgroup file. O_CREATE is harmless on
// cgroupfs (a knob that does not exist cannot be made) and lets the tests'
// directory laid out like cgroupfs stand in for it.
func writeKnob(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %s to %s: %w", value, filepath.Join(dir, name), err)
	}
	return nil
}

// readPids reads a cgroup.procs file.
func readPids(path string) ([]int, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}
