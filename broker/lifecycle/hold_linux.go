package lifecycle

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// holdPrefix names the cgroup v2 directory warm launchers wait in (a
// handle never starts so).
const holdPrefix = "warm-"

// hold is the cgroup v2 directory warm launchers are started in, open
// for CLONE_INTO_CGROUP (fd -1 without cgroup v2: they are then started
// in this broker's cgroup, as a cold launcher is without one). cgroup v2
// puts no process in a directory whose children have controllers, and
// moving one needs write access to the directory above both ends: this
// broker's own.
type hold struct {
	dir string
	fd  int
}

func newHold(c *Cgroups) (*hold, error) {
	h := &hold{fd: -1}
	if c == nil || c.dir == "" {
		return h, nil
	}
	name := randomName(holdPrefix)
	dir, err := mkdirCgroup(c.dir, name)
	if err != nil {
		return nil, err
	}
	if h.fd, err = unix.Open(dir, unix.O_DIRECTORY|unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("open cgroup %s: %w", dir, err)
	}
	h.dir, c.hold = dir, name
	return h, nil
}

// remove removes the hold, which Warm.Close has emptied.
func (h *hold) remove() {
	if h.fd >= 0 {
		unix.Close(h.fd)
		os.Remove(h.dir)
	}
}

// gone reports whether the hold's directory was removed.
func (h *hold) gone() bool {
	if h.fd < 0 {
		return false
	}
	_, err := os.Stat(h.dir)
	return err != nil
}

// warmCosts refuses a warm launcher where the cold one is started in
// all of its action's cgroups by CLONE_INTO_CGROUP (cgroup v2 alone): a
// warm one must be moved there by a cgroup.procs write, and a move waits
// for an RCU grace period (cgroup_threadgroup_rwsem) once none was made
// in the last few milliseconds: 6–16 ms on the test machine, more than
// the launcher's start. Where the action has cgroup v1 directories the
// cold launcher is moved too, and the warm one's moves wait no longer.
func warmCosts(c *Cgroups) error {
	if c != nil && c.dir != "" && c.mem == "" && c.pids == "" {
		return errors.New("its move into an action's cgroup v2 would wait for an RCU grace period, which starting a launcher there (CLONE_INTO_CGROUP) does not")
	}
	return nil
}

// isHold reports whether a child of this broker's cgroup directory is a
// hold, not an action's.
func isHold(name string) bool { return strings.HasPrefix(name, holdPrefix) }
