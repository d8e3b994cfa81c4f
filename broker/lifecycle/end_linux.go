package lifecycle

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/profile"
)

// watchExit closes exited when the process behind pidfd has exited. It
// does not reap it (WNOWAIT): the zombie keeps the process group id from
// being reused while the rest of the group is signalled.
func watchExit(pidfd int, exited chan<- struct{}) {
	defer close(exited)
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PIDFD, pidfd, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

func (s *supervisor) rootExited() bool {
	select {
	case <-s.exited:
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
	s.emit(TermSent, "SIGTERM to process group %d", pgid)
	unix.Kill(-pgid, unix.SIGTERM)
	unix.Kill(-pgid, unix.SIGCONT)
	grace := time.NewTimer(profile.Grace)
	defer grace.Stop()
	select {
	case <-s.exited:
		return
	case <-grace.C:
	}
	s.killGroup("SIGKILL to process group %d after %s grace", pgid, profile.Grace)
	bound := time.NewTimer(killBound)
	defer bound.Stop()
	select {
	case <-s.exited:
	case <-bound.C:
	}
}

// killGroup sends SIGKILL to every member, by cgroup.kill when the action
// has a cgroup and by the process group in every case, and records
// KILL_SENT the first time.
func (s *supervisor) killGroup(format string, args ...any) {
	if !s.killSent {
		s.killSent = true
		s.emit(KillSent, format, args...)
	}
	if s.cg != nil {
		s.cg.kill()
	}
	unix.Kill(-s.l.pid, unix.SIGKILL)
}

// settle confirms the group is gone, drains the streams, reaps the root
// and decides the outcome.
func (s *supervisor) settle(why reason) {
	s.r.RootExited = s.rootExited()
	if s.r.RootExited {
		s.confirmGone()
	} else {
		s.r.Evidence = fmt.Sprintf("the root process %d did not exit within %s of SIGKILL", s.l.pid, killBound)
	}
	s.drain()
	if s.r.RootExited {
		ws := s.l.reap()
		switch {
		case ws.Exited():
			code := ws.ExitStatus()
			s.r.ExitCode = &code
		case ws.Signaled():
			s.r.Signal = int(ws.Signal())
		}
		// With the root reaped the group has no member left; the kernel
		// must agree.
		if s.r.GroupGone {
			if err := unix.Kill(-s.l.pid, 0); err != unix.ESRCH {
				s.r.GroupGone = false
				s.r.Evidence = fmt.Sprintf("kill(-%d, 0) after the last reap returned %v, not ESRCH", s.l.pid, err)
			} else {
				s.r.GoneAt, s.r.GoneMono = time.Now(), time.Since(s.t0)
			}
		}
	} else {
		go s.l.reap() // whenever it finally dies
	}
	decide(&s.r, why)
}

// confirmGone kills and reaps every member of the group but the root
// zombie, until a /proc scan finds none left (and, with a cgroup,
// cgroup.events says populated 0), or confirmBound passes.
func (s *supervisor) confirmGone() {
	pgid, self := s.l.pid, unix.Getpid()
	deadline := time.Now().Add(confirmBound)
	pause := time.Millisecond
	for {
		others, err := groupMembers(pgid)
		if err != nil {
			s.r.Evidence = fmt.Sprintf("scan /proc for group %d: %v", pgid, err)
			return
		}
		alive := 0
		for _, p := range others {
			if p.zombie && p.ppid == self {
				unix.Wait4(p.pid, nil, unix.WNOHANG, nil)
			} else if !p.zombie {
				alive++
			}
		}
		populated := false
		if s.cg != nil {
			if populated, err = s.cg.populated(); err != nil {
				s.r.Evidence = fmt.Sprintf("read cgroup.events: %v", err)
				return
			}
		}
		if len(others) == 0 && !populated {
			s.r.GroupGone = true
			s.r.Evidence = fmt.Sprintf("no process of group %d remains in /proc", pgid)
			if s.cg != nil {
				s.r.ByCgroup = true
				s.r.Evidence += " and cgroup.events says populated 0"
			}
			return
		}
		if time.Now().After(deadline) {
			s.r.Evidence = fmt.Sprintf("%d process(es) of group %d remained %s after SIGKILL (%d alive)", len(others), pgid, confirmBound, alive)
			return
		}
		if alive > 0 || populated {
			s.killGroup("SIGKILL to %d remaining member(s) of process group %d", alive, pgid)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
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
	s.r.StdoutBytes, s.r.StderrBytes = s.out.n, s.err.n
	s.r.StreamsComplete = s.out.complete && s.err.complete
	if !s.r.StreamsComplete && s.r.GroupGone {
		s.r.Evidence += fmt.Sprintf("; but an output pipe stayed open %s after the group was gone", drainBound)
	}
}
