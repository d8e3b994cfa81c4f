package lifecycle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Cgroups is a writable (delegated) cgroup v2 directory in which each
// action gets its own child.
type Cgroups struct {
	dir string
}

// DetectCgroups finds this process's cgroup v2 directory and creates
// "warrant/<scope>" in it; scope names one broker (one state directory),
// so that brokers of different state directories never see each other's
// actions. It returns an error when there is no cgroup v2
// hierarchy, the directory is not writable, or cgroup.kill is missing;
// the broker then supervises by process group alone and says so.
func DetectCgroups(scope string) (*Cgroups, error) {
	if scope == "" || strings.ContainsAny(scope, "/\x00") || scope == "." || scope == ".." {
		panic(fmt.Sprintf("lifecycle: internal error: scope %q cannot name a cgroup", scope))
	}
	mnt, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	var rel string
	for _, line := range strings.Split(string(self), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	if rel == "" {
		return nil, errors.New("no cgroup v2 entry in /proc/self/cgroup")
	}
	dir := filepath.Join(mnt, filepath.Clean("/"+rel), "warrant")
	for _, d := range []string{dir, filepath.Join(dir, scope)} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	dir = filepath.Join(dir, scope)
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		return nil, fmt.Errorf("cgroup %s has no cgroup.kill: %w", dir, err)
	}
	return &Cgroups{dir: dir}, nil
}

// Dir is this broker's cgroup directory.
func (c *Cgroups) Dir() string { return c.dir }

// Remove deletes this broker's cgroup directory if no action cgroup is
// left in it.
func (c *Cgroups) Remove() { os.Remove(c.dir) }

// Leftovers removes the empty action cgroups a previous broker left (it
// died before removing them) and returns the populated ones, which it
// does not touch: the operator decides about processes this broker did
// not start.
func (c *Cgroups) Leftovers() ([]Leftover, error) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", c.dir, err)
	}
	var out []Leftover
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		a := &actionCgroup{dir: filepath.Join(c.dir, e.Name())}
		if populated, err := a.populated(); err != nil || !populated {
			os.Remove(a.dir)
			continue
		}
		procs, _ := os.ReadFile(filepath.Join(a.dir, "cgroup.procs"))
		l := Leftover{ID: e.Name()}
		for _, f := range strings.Fields(string(procs)) {
			if pid, err := strconv.Atoi(f); err == nil {
				l.Pids = append(l.Pids, pid)
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// cgroup2Mount returns the mount point of the cgroup v2 hierarchy.
func cgroup2Mount() (string, error) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("read mountinfo: %w", err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 {
			return f[4], nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// actionCgroup is one action's cgroup, open for CLONE_INTO_CGROUP.
type actionCgroup struct {
	dir string
	fd  int
}

func (c *Cgroups) create(id string) (*actionCgroup, error) {
	if id == "" || strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
		panic(fmt.Sprintf("lifecycle: internal error: action id %q cannot name a cgroup", id))
	}
	dir := filepath.Join(c.dir, id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &actionCgroup{dir: dir, fd: fd}, nil
}

func (a *actionCgroup) kill() {
	os.WriteFile(filepath.Join(a.dir, "cgroup.kill"), []byte("1"), 0)
}

func (a *actionCgroup) populated() (bool, error) {
	ev, err := os.ReadFile(filepath.Join(a.dir, "cgroup.events"))
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

// remove deletes an empty action cgroup. A cgroup that still has members
// cannot be removed; it stays for the operator to inspect.
func (a *actionCgroup) remove() {
	unix.Close(a.fd)
	os.Remove(a.dir)
}
