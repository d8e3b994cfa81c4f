package lifecycle

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// Bounds on the end of an action. They bound waiting on the kernel, not
// the target: a target is always ended within its profile's wall time plus
// profile.Grace plus these.
const (
	killBound    = 5 * time.Second // root must die this long after SIGKILL
	confirmBound = 5 * time.Second // the rest of the group must be gone within this
	drainBound   = 2 * time.Second // pipes must reach EOF within this after that
)

// BecomeSubreaper makes this process the reaper of every orphaned
// descendant (PR_SET_CHILD_SUBREAPER). The broker calls it once at start.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	return nil
}

// Run launches spec and supervises it to its end. It returns only once the
// outcome is decided from observed facts.
func Run(spec Spec) Result {
	s := &supervisor{spec: &spec, t0: time.Now()}
	s.run()
	s.r.Ended = time.Now()
	s.r.Duration = time.Since(s.t0)
	return s.r
}

type supervisor struct {
	spec *Spec
	t0   time.Time
	r    Result
	cg   *actionCgroup
	l    *launcher

	exited   chan struct{} // closed when the root has exited (not reaped)
	over     chan struct{} // closed when a stream exceeds the hard budget
	overOnce sync.Once
	out, err *capture
	killSent bool
}

func (s *supervisor) emit(k EventKind, format string, args ...any) {
	if s.spec.OnEvent != nil {
		s.spec.OnEvent(Event{Kind: k, Wall: time.Now(), Mono: time.Since(s.t0), Detail: fmt.Sprintf(format, args...)})
	}
}

// fail records an outcome in which no target process ever ran.
func (s *supervisor) fail(o wire.Outcome, code wire.Code, format string, args ...any) {
	s.r.Outcome = o
	s.r.Err = wire.Errorf(code, format, args...)
}

func (s *supervisor) run() {
	if s.spec.Cgroup != nil {
		cg, err := s.spec.Cgroup.create(s.spec.ID)
		if err != nil {
			s.fail(wire.KnownNotExecuted, wire.CodeIOFailed, "create the action's cgroup: %v", err)
			return
		}
		s.cg = cg
		defer cg.remove()
	}
	l, err := start(s.spec, s.cg)
	if err != nil {
		s.fail(wire.SpawnFailed, wire.CodeIOFailed, "%v", err)
		return
	}
	s.l = l
	defer l.close()
	s.exited = make(chan struct{})
	go watchExit(l.pidfd, s.exited)
	s.over = make(chan struct{})
	budget := s.spec.Limits.HardOutput
	s.out = newCapture(l.stdout, s.spec.Stdout, budget, s.signalOver)
	s.err = newCapture(l.stderr, s.spec.Stderr, budget, s.signalOver)
	if s.handshake() {
		s.supervise()
	}
}

func (s *supervisor) signalOver() { s.overOnce.Do(func() { close(s.over) }) }

// handshake reads the launcher's replies. It returns true once Ready has
// been followed by EOF: the target is running. Otherwise the outcome is
// decided and the launcher reaped.
func (s *supervisor) handshake() bool {
	m, err := s.l.reply()
	switch m := m.(type) {
	case *wire.Refused:
		s.r.Refused = m
		s.notStarted(wire.KnownNotExecuted, m.Code, "%s", m.Detail)
		return false
	case *wire.Ready:
		s.r.Ready = m
	default:
		unix.PidfdSendSignal(s.l.pidfd, unix.SIGKILL, nil, 0)
		s.notStarted(wire.SpawnFailed, wire.CodeInternal, "the launcher gave no valid reply before Ready: %v", errOr(err, m))
		return false
	}
	m, err = s.l.reply()
	if errors.Is(err, io.EOF) {
		s.r.Pid, s.r.Started = s.l.pid, time.Now()
		s.emit(Started, "pid %d", s.l.pid)
		return true
	}
	if f, ok := m.(*wire.ExecFailed); ok {
		s.r.Errno = f.Errno
		code := wire.CodeIOFailed
		if unix.Errno(f.Errno) == unix.ENOENT {
			code = wire.CodeExecutableNotFound
		}
		s.notStarted(wire.SpawnFailed, code, "execveat failed: %v", unix.Errno(f.Errno))
		return false
	}
	// Past Ready the launcher has called setsid and may exec at any moment:
	// end its group like any target's, and admit that we do not know.
	s.r.Pid = s.l.pid
	s.endGroup()
	s.settle(reasonNone)
	s.r.Outcome = wire.OutcomeUnknown
	s.r.Err = wire.Errorf(wire.CodeUnknownOutcome, "the launcher sent Ready but then %v", errOr(err, m))
	return false
}

// notStarted reaps a launcher that exited (or was killed) without exec.
func (s *supervisor) notStarted(o wire.Outcome, code wire.Code, format string, args ...any) {
	s.l.reap()
	s.drain()
	s.fail(o, code, format, args...)
}

// supervise waits for the root to exit or for a reason to end the group,
// then settles the outcome.
func (s *supervisor) supervise() {
	timer := time.NewTimer(s.spec.Limits.Wall)
	defer timer.Stop()
	why := reasonNone
	select {
	case <-s.exited:
	case <-timer.C:
		why = reasonTimeout
	case <-s.spec.Cancel:
		why = reasonCancel
	case <-s.over:
		why = reasonOutputLimit
	}
	if why != reasonNone {
		s.endGroup()
	}
	s.settle(why)
	if s.r.Outcome == wire.OutcomeUnknown {
		s.emit(UnknownTermination, "%s", s.r.Evidence)
	} else {
		s.emit(Terminated, "%s", s.r.Outcome)
	}
}

func errOr(err error, m wire.Message) any {
	if err != nil {
		return err
	}
	return fmt.Sprintf("sent %T", m)
}
