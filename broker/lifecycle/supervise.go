//go:build linux || darwin

package lifecycle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"warrant/receipt"
	"warrant/wire"
)

// Run launches spec and supervises it to its end. It returns only once the
// outcome is decided from observed facts.
func Run(spec Spec) Result {
	s := &supervisor{spec: &spec}
	s.run()
	return s.r
}

// supervisor is one action's supervision. The platform's containment
// (a cgroup on Linux, nothing on macOS) lives in osState, behind setup,
// spawn, killContainer, survey and markGone.
type supervisor struct {
	spec *Spec
	r    Result
	l    *launcher
	warm *launcher // the warm launcher setup took with its cgroups, or nil
	osState

	over     chan struct{} // closed when a stream exceeds the hard budget
	overOnce sync.Once
	out, err *capture
	killSent bool
}

func (s *supervisor) emit(k receipt.EventType, format string, args ...any) time.Time {
	now := time.Now()
	if s.spec.OnEvent != nil {
		s.spec.OnEvent(Event{Kind: k, Wall: now, Detail: fmt.Sprintf(format, args...)})
	}
	return now
}

// fail records an outcome in which no target process ever ran.
func (s *supervisor) fail(o wire.Outcome, code wire.Code, format string, args ...any) {
	s.r.Outcome = o
	s.r.Err = wire.Errorf(code, format, args...)
}

func (s *supervisor) run() {
	defer s.after(s.spec.Warm.refill) // the next launcher starts once this action is recorded
	if err := s.spec.Egress.check(s.spec.Request.EgressPort); err != nil {
		s.fail(wire.KnownNotExecuted, wire.CodeSandboxUnavailable, "egress: %v; nothing was started", err)
		return
	}
	undo, err := s.setup()
	if err != nil {
		s.fail(wire.KnownNotExecuted, wire.CodeIOFailed, "%v", err)
		return
	}
	defer s.after(undo)
	l, err := start(s.spec, &s.osState, s.warm)
	if err != nil {
		// Nothing was started, or the launcher was killed before it was
		// sent Proceed: it executes only after that.
		s.fail(wire.KnownNotExecuted, wire.CodeIOFailed, "%v", err)
		return
	}
	s.l = l
	defer l.close()
	s.prepareMetadata() // while the launcher confines itself
	defer s.stopMetadata()
	s.over = make(chan struct{})
	budget := s.spec.Limits.HardOutput
	s.out = newCapture(l.stdout, s.spec.Stdout, budget, s.signalOver)
	s.err = newCapture(l.stderr, s.spec.Stderr, budget, s.signalOver)
	if s.handshake() {
		s.supervise()
	}
}

// after hands start, background work of the action, to Spec.After, or
// calls it at once.
func (s *supervisor) after(start func()) {
	if s.spec.After != nil {
		s.spec.After(start)
	} else {
		start()
	}
}

func (s *supervisor) signalOver() { s.overOnce.Do(func() { close(s.over) }) }

// handshake reads the launcher's replies and, once Ready has checked and
// Spec.Durable returned, sends Proceed. It returns true once Ready has
// been followed by EOF: the target is running. Otherwise the outcome is
// decided and the launcher reaped.
func (s *supervisor) handshake() bool {
	m, fds, err := s.l.reply()
	if _, ready := m.(*wire.Ready); !ready && len(fds) > 0 {
		closeFDs(fds)
		m, err = nil, errors.New("the launcher sent descriptors with a reply other than Ready")
	}
	switch m := m.(type) {
	case *wire.Refused:
		s.r.Refused = m
		s.notStarted(wire.KnownNotExecuted, m.Code, "%s", m.Detail)
		return false
	case *wire.Ready:
		s.r.Ready = m
		// The listener is taken first, so that no metadata call of the
		// target can wait unanswered (it would otherwise fail ENOSYS).
		if err := s.serveMetadata(fds); err != nil {
			s.abortAfterReady(wire.CodeSandboxUnavailable, "the launcher's seccomp listener: %v", err)
			return false
		}
		if err := checkReady(m, s.spec.Request); err != nil {
			s.abortAfterReady(wire.CodeIdentityDrift, "the launcher's measured facts differ from the request: %v", err)
			return false
		}
		if s.spec.Durable != nil {
			if err := s.spec.Durable(); err != nil {
				// The launcher executes only after Proceed: it ran nothing.
				s.l.h.kill()
				s.notStarted(wire.KnownNotExecuted, wire.CodeIOFailed, "the action's EXECUTING record could not be made durable, so it was not run: %v", err)
				return false
			}
		}
		if _, err := s.l.sock.Write(proceedFrame()); err != nil {
			s.abortAfterReady(wire.CodeUnknownOutcome, "the launcher sent Ready but Proceed could not be sent: %v", err)
			return false
		}
	default:
		s.l.h.kill()
		s.notStarted(wire.KnownNotExecuted, wire.CodeInternal, "the launcher gave no valid reply before Ready: %v", errOr(err, m))
		return false
	}
	m, fds, err = s.l.reply()
	if len(fds) > 0 {
		closeFDs(fds)
		m, err = nil, errors.New("the launcher sent descriptors after Ready")
	}
	if errors.Is(err, io.EOF) {
		s.r.Pid = s.l.pid
		s.r.Started = s.emit(receipt.EventStarted, "pid %d", s.l.pid)
		return true
	}
	if f, ok := m.(*wire.ExecFailed); ok {
		s.r.Errno = f.Errno
		switch unix.Errno(f.Errno) {
		case unix.ENOENT:
			s.notStarted(wire.SpawnFailed, wire.CodeExecutableNotFound, "exec failed: %v", unix.Errno(f.Errno))
		case unix.EPROTO: // awaitProceed's answer: execveat never returns it here
			s.notStarted(wire.SpawnFailed, wire.CodeInternal, "the launcher did not take the broker's Proceed (%v), so nothing ran", unix.Errno(f.Errno))
		case unix.ETXTBSY: // in place: a writer opened the file (breaking the broker's read lease) as it was to run
			s.notStarted(wire.SpawnFailed, wire.CodeIdentityDrift,
				"exec failed: %v: the program was opened for writing as it was about to run, so it was not run; submit again once it is written", unix.Errno(f.Errno))
		default:
			s.notStarted(wire.SpawnFailed, wire.CodeIOFailed, "exec failed: %v", unix.Errno(f.Errno))
		}
		return false
	}
	s.abortAfterReady(wire.CodeUnknownOutcome, "the launcher sent Ready but then %v", errOr(err, m))
	return false
}

// proceedFrame is the Proceed the broker sends each launcher, encoded at
// its first use (not at init: every broker command starts this package).
var proceedFrame = sync.OnceValue(func() []byte {
	b, err := wire.EncodeFrame(&wire.Proceed{})
	if err != nil {
		panic("lifecycle: internal error: " + err.Error())
	}
	return b
})

// abortAfterReady ends a launch that went wrong after Ready. Past Ready
// the launcher has called setsid, and one that misreported, or that was
// sent Proceed, is not known to have stayed the launcher: its group is
// ended like any target's, and the outcome is unknown.
func (s *supervisor) abortAfterReady(code wire.Code, format string, args ...any) {
	s.r.Pid = s.l.pid
	s.endGroup()
	s.settle(reasonNone)
	s.r.Outcome = wire.OutcomeUnknown
	s.r.Err = wire.Errorf(code, format, args...)
	s.emit(receipt.EventUnknownTermination, "%s", s.r.Err.Message)
}

// checkReady compares what the launcher measured with what it was asked
// to run. The launcher is trusted to refuse on any difference; the broker
// checks again, so a launcher that reports other bytes or another
// directory is never recorded as having run the approved action.
func checkReady(r *wire.Ready, q *wire.SpawnRequest) error {
	want := []byte(nil)
	if q.Interpreter != nil {
		want = q.Interpreter.File.SHA256
	}
	// In place the launcher measured identities, not bytes: the broker's
	// witness after the exec completes the binding.
	inPlace := r.Binding == wire.InPlace
	switch {
	case (q.Binding == wire.InPlace) != inPlace:
		return fmt.Errorf("the binding is %s, not the requested %s", r.Binding, q.Binding)
	case !inPlace && !bytes.Equal(r.ExecutedSHA256, q.Executable.SHA256):
		return errors.New("the executed bytes are not the approved digest")
	case !inPlace && !bytes.Equal(r.InterpreterSHA256, want):
		return errors.New("the interpreter is not the approved one")
	case !r.Workspace.Same(q.Workspace):
		return errors.New("the workspace is not the approved directory")
	case !r.Cwd.Same(q.Cwd):
		return errors.New("the cwd is not the approved directory")
	case len(q.Protect) > 0 && !r.MountNS:
		return errors.New("the protected paths were not bound in a mount namespace")
	case int(r.Protected) > len(q.Protect):
		return errors.New("more protected binds than were asked for")
	}
	return nil
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
	case <-s.l.exited:
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
		s.emit(receipt.EventUnknownTermination, "%s", s.r.Evidence)
	} else {
		s.emit(receipt.EventTerminated, "%s", s.r.Outcome)
	}
}

func errOr(err error, m wire.Message) any {
	if err != nil {
		return err
	}
	return fmt.Sprintf("sent %T", m)
}
