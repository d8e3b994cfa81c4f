//go:build linux || darwin

package lifecycle

import (
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/profile"
	"warrant/receipt"
)

// Bounds on the end of an action. They bound waiting on the kernel, not
// the target: a target is always ended within its profile's wall time plus
// profile.Grace plus these.
const (
	killBound    = 5 * time.Second // root must die this long after SIGKILL
	confirmBound = 5 * time.Second // the rest of the group must be gone within this
	drainBound   = 2 * time.Second // pipes must reach EOF within this after that
)

// snapshot is what one survey of the host found left of an action.
type snapshot struct {
	group     []member // processes of the group other than the root
	leavers   []member // descendants found outside the group (macOS only)
	populated bool     // the action's cgroups still have members (Linux only)
}

func (s *supervisor) rootExited() bool {
	select {
	case <-s.l.exited:
		return true
	default:
		return false
	}
}

// endGroup sends SIGTERM (and SIGCONT, so stopped members can act on it)
// to the whole group, waits the grace period for the root, then sends
// SIGKILL and waits for the root to die.
func (s *supervisor) endGroup() {
	pgid := s.l.pid
	s.emit(receipt.EventTermSent, "SIGTERM to process group %d", pgid)
	unix.Kill(-pgid, unix.SIGTERM)
	unix.Kill(-pgid, unix.SIGCONT)
	grace := time.NewTimer(profile.Grace)
	defer grace.Stop()
	select {
	case <-s.l.exited:
		return
	case <-grace.C:
	}
	s.killGroup("SIGKILL to process group %d after %s grace", pgid, profile.Grace)
	bound := time.NewTimer(killBound)
	defer bound.Stop()
	select {
	case <-s.l.exited:
	case <-bound.C:
	}
}

// killGroup sends SIGKILL to every member, through the platform's
// container when there is one and by the process group in every case, and
// records KILL_SENT the first time.
func (s *supervisor) killGroup(format string, args ...any) {
	if !s.killSent {
		s.killSent = true
		s.emit(receipt.EventKillSent, format, args...)
	}
	s.killContainer()
	unix.Kill(-s.l.pid, unix.SIGKILL)
}

// settle confirms the group is gone, drains the streams, reaps the root
// and decides the outcome.
func (s *supervisor) settle(why reason) {
	s.r.RootExited = s.rootExited()
	if s.r.RootExited {
		// The exit watcher and the handshake observe independently, so a
		// target that exits at once may be seen to exit before the EOF
		// that proves its exec was read. Facts are recorded in the order
		// this process observed them: the exit no earlier than STARTED.
		s.r.RootExitAt = s.l.exitAt
		if s.r.RootExitAt.Before(s.r.Started) {
			s.r.RootExitAt = s.r.Started
		}
		s.confirmGone()
	} else {
		s.r.Evidence = fmt.Sprintf("the root process %d did not exit within %s of SIGKILL", s.l.pid, killBound)
	}
	s.drain()
	if s.r.RootExited {
		ws, err := s.l.reap()
		switch {
		case err != nil:
			s.r.GroupGone = false
			s.r.Evidence = fmt.Sprintf("the root process %d could not be reaped (%v): its exit status is unknown, and so is what its group id names", s.l.pid, err)
		case ws.Exited():
			code := ws.ExitStatus()
			s.r.ExitCode = &code
		case ws.Signaled():
			s.r.Signal = int(ws.Signal())
		}
		if s.r.GroupGone {
			if err := emptiedGroup(s.l.pid); err != nil {
				s.r.GroupGone = false
				s.r.Evidence = err.Error()
			} else {
				s.r.GoneAt = time.Now()
				s.r.Evidence += fmt.Sprintf(", and kill(-%d, 0) returned ESRCH once the root and the group's zombies re-parented to this broker were reaped", s.l.pid)
			}
		}
	} else {
		go s.l.reap() // whenever it finally dies
	}
	if !s.r.StreamsComplete && s.r.GroupGone {
		s.r.Evidence += fmt.Sprintf("; but an output pipe stayed open %s after the group was gone", drainBound)
	}
	s.readUsage()
	decide(&s.r, why, s.spec.Limits.Wall)
	memoryEnding(&s.r, s.spec.Limits.Memory)
}

// emptiedGroup requires the kernel to agree, once the root is reaped, that
// group pgid has no member left: kill(-pgid, 0) returns ESRCH. Until
// confirmBound passes it reaps the zombies of the group that are or
// become this broker's children: orphans re-parented to it, some of them
// only as the group was surveyed (Linux takes a process out of its cgroup
// before it re-parents its children). Nothing else can be left once the
// group was seen gone. A zombie member holds the group's id as long as it
// is not reaped, so the id cannot name another group meanwhile.
func emptiedGroup(pgid int) error {
	deadline := time.Now().Add(confirmBound)
	pause := time.Millisecond
	for {
		err := unix.Kill(-pgid, 0)
		if err == unix.ESRCH {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill(-%d, 0) after the last reap returned %v, not ESRCH", pgid, err)
		}
		if reapGroup(pgid) == 0 { // what is left is still on its way here
			time.Sleep(pause)
			pause = min(2*pause, 50*time.Millisecond)
		}
	}
}

// reapGroup reaps every zombie child of this process in group pgid (wait4
// of -pgid) and returns how many it reaped.
func reapGroup(pgid int) (n int) {
	for {
		pid, err := unix.Wait4(-pgid, nil, unix.WNOHANG, nil) // WNOHANG: never EINTR
		if err != nil || pid <= 0 {
			return n
		}
		n++
	}
}

// confirmGone kills and reaps every member of the group but the root
// zombie, until a survey finds none left (and no leaver, and, with a
// cgroup, cgroup.events says populated 0), or confirmBound passes. A
// leaver, once seen, is killed by pid but keeps the group from being
// called gone: what it started after leaving cannot be traced.
func (s *supervisor) confirmGone() {
	pgid, self := s.l.pid, unix.Getpid()
	deadline := time.Now().Add(confirmBound)
	pause := time.Millisecond
	var left []int // pids of leavers seen, in order
	for {
		snap, err := s.survey(pgid)
		if err != nil {
			s.r.Evidence = err.Error()
			return
		}
		alive := reapOrCount(snap.group, self)
		for _, p := range snap.leavers {
			if !slices.Contains(left, p.pid) {
				left = append(left, p.pid)
			}
		}
		leaversAlive := reapOrCount(snap.leavers, self)
		if len(snap.group) == 0 && len(snap.leavers) == 0 && !snap.populated {
			if len(left) > 0 {
				s.r.Evidence = fmt.Sprintf("process(es) %v left process group %d, so what they started cannot be traced; the group itself is gone", left, pgid)
				return
			}
			s.markGone(pgid)
			return
		}
		if time.Now().After(deadline) {
			s.r.Evidence = fmt.Sprintf("%d process(es) of group %d and %d that left it remained %s after SIGKILL (%d alive)",
				len(snap.group), pgid, len(snap.leavers), confirmBound, alive+leaversAlive)
			return
		}
		if alive > 0 || snap.populated {
			s.killGroup("SIGKILL to %d remaining member(s) of process group %d", alive, pgid)
		}
		for _, p := range snap.leavers {
			// The pid is held by a live or zombie process whose parent is
			// a member of the action; it is killed within the same pass.
			unix.Kill(p.pid, unix.SIGKILL)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// reapOrCount reaps the zombies among ms that are this process's children
// (orphans re-parented to the broker) and returns how many are alive.
func reapOrCount(ms []member, self int) (alive int) {
	for _, p := range ms {
		if p.zombie && p.ppid == self {
			unix.Wait4(p.pid, nil, unix.WNOHANG, nil)
		} else if !p.zombie {
			alive++
		}
	}
	return alive
}

// drain lets both captures reach EOF within drainBound. Once the group is
// gone nothing can hold the write ends, so EOF is immediate; a stream that
// does not end is recorded as incomplete.
func (s *supervisor) drain() {
	deadline := time.Now().Add(drainBound)
	s.l.stdout.SetReadDeadline(deadline)
	s.l.stderr.SetReadDeadline(deadline)
	<-s.out.done
	<-s.err.done
	s.r.StreamsComplete = s.out.complete && s.err.complete
}
