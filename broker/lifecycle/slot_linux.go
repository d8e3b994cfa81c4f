package lifecycle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"warrant/wire"
)

// slotPrefix names the cgroups of a warm launcher's slot (a handle never
// starts so).
const slotPrefix = "warm-"

// slot is a warm launcher and the cgroups it waits in (nil without
// cgroups), made for shape.
type slot struct {
	l     *launcher
	cg    *actionCgroup
	shape shape
}

// newSlot makes cgroups named warm-<random> with sh's limits, starts a
// launcher of path in them (launch), sends it the Prepare of sh's /etc
// entries and reads its Origin: none of that is left to the action.
func newSlot(path string, c *Cgroups, sh shape) (*slot, error) {
	sl := &slot{shape: sh}
	frame, err := wire.EncodeFrame(&wire.Prepare{Protocol: wire.SpawnProtocol, Entries: sh.entries})
	if err != nil {
		return nil, err
	}
	if c != nil {
		cg, err := c.create(randomName(slotPrefix), sh.lim)
		if err != nil {
			return nil, err
		}
		sl.cg = cg
	}
	l, err := sl.cg.launch(path)
	if err != nil {
		sl.discard()
		return nil, err
	}
	sl.l = l
	if err := sendRequest(int(l.req.Fd()), frame, nil); err != nil {
		sl.discard()
		return nil, fmt.Errorf("send the prepare message: %w", err)
	}
	o, err := readOrigin(l.pid)
	if err != nil {
		sl.discard()
		return nil, err
	}
	l.origin = &o
	return sl, nil
}

// discard ends a slot nobody took: its launcher, then its cgroups.
func (sl *slot) discard() {
	if sl.l != nil {
		sl.l.abandon()
	}
	if sl.cg != nil {
		sl.cg.remove()
	}
}

// adopt makes sl's cgroups the action id's: its v1 directories renamed
// to id (cgroup v1 allows a rename within the parent), its v2 directory
// kept under the slot's name (cgroup v2 allows none). On error the
// caller discards sl, with whatever was renamed.
func (sl *slot) adopt(id string) error {
	a := sl.cg
	if a == nil {
		return nil
	}
	checkName("action id", id)
	for _, p := range []*string{&a.mem, &a.pids} {
		if *p == "" {
			continue
		}
		dst := filepath.Join(filepath.Dir(*p), id)
		if err := os.Rename(*p, dst); err != nil {
			return fmt.Errorf("rename the warm launcher's cgroup %s: %w", *p, err)
		}
		*p = dst
	}
	return nil
}

// warmCosts refuses a warm launcher where an action's cgroups would be
// known by their v2 directory alone (cgroup v2 without v1 directories):
// that directory keeps the slot's name, and recovery finds an action by
// the name of its cgroups. There, too, a cold launcher is started in all
// its cgroups by CLONE_INTO_CGROUP and waits for no move.
func warmCosts(c *Cgroups) error {
	if c != nil && c.dir != "" && c.mem == "" && c.pids == "" {
		return errors.New("an action's cgroup v2 directory cannot be renamed to its handle, and there is no cgroup v1 directory to carry it")
	}
	return nil
}

// isSlot reports whether a child of this broker's cgroup directories is a
// warm launcher's slot, not an action's.
func isSlot(name string) bool { return strings.HasPrefix(name, slotPrefix) }

// prepared is the /etc entries req's launcher may grant ahead.
func prepared(req *wire.SpawnRequest) []wire.PathPin { return req.Policy.Prepared().Entries }
