package linux

import (
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
	"warrant/wire"
)

// requestFD is the SOCK_SEQPACKET socket the broker passes as fd 3.
const requestFD = 3

// Exit statuses of the launcher itself; a target that runs has its own.
const (
	exitRefused    = 125 // nothing was executed
	exitExecFailed = 127 // every check passed and execveat returned
)

// Main runs the fixed sequence of doc.go and returns the exit status when
// it does not exec. It must run on the main goroutine before anything else.
func Main() int {
	runtime.LockOSThread() // never unlocked: the sandbox steps and the exec share this thread
	ready, exec, err := prepare()
	if err != nil {
		// prepare may have stopped before it checked fd 3.
		if isSeqpacket(requestFD) {
			reply(refusal(err))
		}
		return exitRefused
	}
	sent := reply(ready, exec.listener)
	unix.Close(exec.listener) // the broker holds the listener now; the target must not
	if !sent {
		return exitRefused
	}
	errno := awaitProceed()
	if errno == 0 {
		errno = exec.run()
	}
	reply(&wire.ExecFailed{Errno: uint32(errno)})
	return exitExecFailed
}

// prepare performs steps 1–10. It returns the facts for Ready and the
// prepared exec, or the reason for refusing.
func prepare() (*wire.Ready, *execution, error) {
	if err := cleanSlate(); err != nil {
		return nil, nil, err
	}
	if err := installArgs(); err != nil {
		return nil, nil, err
	}
	_ = wire.Prime(wire.TypePrepare, wire.TypeSpawnRequest, wire.TypeReady, wire.TypeProceed) // while a warm launcher waits: see Prime
	rules, err := newRules()
	if err != nil {
		return nil, nil, err
	}
	req, fds, err := readRequest(requestFD, rules)
	if err != nil {
		return nil, nil, err
	}
	ready := &wire.Ready{Binding: wire.SealedSnapshot}
	if ready.Workspace, err = checkWorkspace(fds.workspace, req.Workspace); err != nil {
		return nil, nil, err
	}
	if ready.Cwd, err = enterCwd(fds.workspace, req.Cwd); err != nil {
		return nil, nil, err
	}
	exec, err := bindExecutable(req, fds)
	if err != nil {
		return nil, nil, err
	}
	ready.ExecutedSHA256, ready.InterpreterSHA256 = exec.sha256, exec.interpSHA256
	if exec.boundBy != 0 {
		ready.Binding, ready.BoundBy = wire.InPlace, exec.boundBy
	}
	if err := protectPaths(req, ready.Cwd, ready); err != nil {
		return nil, nil, err
	}
	if err := setStdio(fds, exec.keep); err != nil {
		return nil, nil, err
	}
	if err := dropPrivileges(req.Profile); err != nil {
		return nil, nil, err
	}
	if err := restrictFS(req, rules, fds.workspace, ready); err != nil {
		return nil, nil, err
	}
	unix.Close(fds.workspace)
	if ready.SeccompDigest, exec.listener, err = installSeccomp(req.ObserveWrites); err != nil {
		return nil, nil, err
	}
	return ready, exec, nil
}

// refusal turns any error of prepare into the Refused reply. Steps return
// *wire.Error with a stable code; anything else is an internal failure.
func refusal(err error) *wire.Refused {
	r := &wire.Refused{Code: wire.CodeInternal, Detail: err.Error()}
	if e, ok := err.(*wire.Error); ok {
		r.Code, r.Detail = e.Code, e.Message
	}
	// The detail may quote hostile bytes: keep it valid, NUL-free text
	// within wire's cap, so that the refusal itself always encodes.
	d := strings.ReplaceAll(r.Detail, "\x00", "")
	if len(d) > maxDetail {
		d = d[:maxDetail]
	}
	r.Detail = strings.ToValidUTF8(d, "?")
	return r
}

// maxDetail keeps a refusal's sentence under wire's 4096-byte text cap
// even after invalid bytes are replaced.
const maxDetail = 1024

// reply sends m as the one datagram of the reply on fd 3, which the
// caller knows to be a SOCK_SEQPACKET socket (checkSocket or isSeqpacket),
// with fds attached (SCM_RIGHTS): Ready carries the seccomp listener.
func reply(m wire.Message, fds ...int) bool {
	buf, err := wire.EncodeFrame(m)
	if err != nil {
		// Only a message that fails its own validation cannot be encoded.
		panic("linux: internal error: " + err.Error())
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	err = retry.EINTR(func() error { return unix.Sendmsg(requestFD, buf, oob, nil, 0) })
	return err == nil
}

// awaitProceed performs step 12: it reads the broker's one Proceed, sent
// once the action is durably EXECUTING, and returns 0, or the errno that
// ExecFailed reports (EPROTO for anything else, descriptors included).
func awaitProceed() unix.Errno {
	var buf [64]byte // a Proceed frame is 28 bytes; a longer datagram is MSG_TRUNC
	n, oobn, flags, err := recvmsg(requestFD, buf[:], nil, unix.MSG_CMSG_CLOEXEC)
	if errno, ok := err.(unix.Errno); ok {
		return errno
	}
	m, err := wire.DecodeFrame(buf[:n], wire.MaxLauncherFrame, wire.SpawnChannel)
	if _, ok := m.(*wire.Proceed); err != nil || !ok || oobn != 0 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return unix.EPROTO
	}
	return 0
}

// execution is a verified, bound program ready for execveat.
type execution struct {
	fd           int          // the sealed memfd handed to execveat
	argv, env    []string     // what the target sees
	keep         int          // a descriptor the target inherits (the script), or -1
	listener     int          // the seccomp notification listener, handed to the broker with Ready
	boundBy      wire.BoundBy // in-place: what binds the bytes; 0: a sealed snapshot
	sha256       []byte       // of the executable (the script for a "#!" tuple)
	interpSHA256 []byte       // of the interpreter, for a script
}

// run clears the signal mask again (nothing may have blocked a signal
// since step 1) and executes. It returns only when nothing was executed,
// with the errno of the step that failed: past Ready, ExecFailed is the
// only reply that tells the broker so.
func (e *execution) run() unix.Errno {
	if err := clearSignalMask(); err != nil {
		if errno, ok := err.(unix.Errno); ok {
			return errno
		}
		return unix.EINVAL // x/sys returns bare errnos; fail closed all the same
	}
	return execveat(e.fd, e.argv, e.env)
}
