package lifecycle

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// osState is the Linux containment of one action: its cgroup, when the
// broker has a delegated cgroup v2.
type osState struct {
	cg *actionCgroup
}

// BecomeSubreaper makes this process the reaper of every orphaned
// descendant (PR_SET_CHILD_SUBREAPER). The broker calls it once at start.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	return nil
}

// setup creates the action's cgroup when the broker has one; undo removes
// it once the action is over.
func (s *supervisor) setup() (undo func(), err error) {
	if s.spec.Cgroup == nil {
		return func() {}, nil
	}
	cg, err := s.spec.Cgroup.create(s.spec.ID)
	if err != nil {
		return nil, fmt.Errorf("create the action's cgroup: %w", err)
	}
	s.cg = cg
	return cg.remove, nil
}

// killContainer kills every process of the action's cgroup at once.
func (s *supervisor) killContainer() {
	if s.cg != nil {
		s.cg.kill()
	}
}

// survey scans /proc for the group and reads the cgroup's populated flag.
// Descendants cannot leave the group here: the launcher's seccomp policy
// denies setsid and setpgid, and the cgroup holds them regardless.
func (s *supervisor) survey(pgid int) (snapshot, error) {
	group, err := groupMembers(pgid)
	if err != nil {
		return snapshot{}, fmt.Errorf("scan /proc for group %d: %w", pgid, err)
	}
	snap := snapshot{group: group}
	if s.cg != nil {
		if snap.populated, err = s.cg.populated(); err != nil {
			return snapshot{}, fmt.Errorf("read cgroup.events: %w", err)
		}
	}
	return snap, nil
}

// markGone records the group as gone and how that was confirmed.
func (s *supervisor) markGone(pgid int) {
	s.r.GroupGone = true
	s.r.Evidence = fmt.Sprintf("no process of group %d remains in /proc", pgid)
	if s.cg != nil {
		s.r.ByCgroup = true
		s.r.Evidence += " and cgroup.events says populated 0"
	}
}
