package lifecycle

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// sZomb is SZOMB from <sys/proc.h>: p_stat of an exited, unreaped process.
const sZomb = 5

// osState is empty on macOS: there is no container (no cgroups), only the
// process group and what enumeration can find.
type osState struct{}

// serveMetadata accepts no descriptor: on macOS Seatbelt's profile
// governs metadata changes itself, and the launcher sends none.
func (s *supervisor) serveMetadata(fds []int) error {
	if len(fds) != 0 {
		closeFDs(fds)
		return fmt.Errorf("the Ready reply carried %d descriptors, want none", len(fds))
	}
	return nil
}

func (s *supervisor) stopMetadata() {}

// noEgress says why no egress grant is offered on macOS: nothing answers
// the target's connect there to bring it to the proxy and nowhere else.
const noEgress = "egress leases are offered on Linux only: on macOS nothing confines a target's connections to the broker's proxy"

// prepareMetadata prepares nothing: macOS has no metadata listener.
func (s *supervisor) prepareMetadata() {}

// BecomeSubreaper does nothing: macOS has no subreaper. A descendant
// orphaned inside an action is re-parented to launchd, which reaps it;
// while it lives it is still found in the group (kern.proc.all lists its
// pgid) and is killed with it. Only the root is the broker's child.
func BecomeSubreaper() error { return nil }

// setup takes a warm launcher, if one is ready; there are no cgroups to
// make.
func (s *supervisor) setup() (undo func(), err error) {
	if sl := s.spec.Warm.take(s.spec); sl != nil {
		s.warm = sl.l
	}
	return func() {}, nil
}

// launch starts a launcher of path: there are no cgroups to start it in.
func (o *osState) launch(path string) (*launcher, error) { return startLauncher(path, -1) }

// readUsage does nothing: no limit counts anything on macOS.
func (s *supervisor) readUsage() {}

// killContainer does nothing: there is no container to kill on macOS.
func (s *supervisor) killContainer() {}

// survey takes one snapshot of the whole process table (sysctl
// kern.proc.all, rather than kern.proc.pgrp plus a second listing, so the
// group and its leavers come from the same instant) and classifies it.
func (s *supervisor) survey(pgid int) (snapshot, error) {
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return snapshot{}, fmt.Errorf("list processes with sysctl kern.proc.all: %w", err)
	}
	table := make([]proc, len(all))
	for i := range all {
		k := &all[i]
		table[i] = proc{pid: int(k.Proc.P_pid), ppid: int(k.Eproc.Ppid), pgid: int(k.Eproc.Pgid), zombie: k.Proc.P_stat == sZomb}
	}
	group, leavers := classify(table, pgid)
	return snapshot{group: group, leavers: leavers}, nil
}

// markGone records the group as gone, and that this cannot cover a
// process that left the group and was then orphaned.
func (s *supervisor) markGone(pgid int) {
	s.r.GroupGone = true
	s.r.LeaversUntracked = true
	s.r.Evidence = fmt.Sprintf("no process of group %d remains and none of its members' descendants was found outside it (sysctl kern.proc.all); "+
		"on macOS a process that left the group and whose parent then exited cannot be traced, so it is not covered", pgid)
}

// AuditDenials is false: macOS has no Landlock.
func AuditDenials() bool { return false }
