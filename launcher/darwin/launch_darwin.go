package darwin

import (
	"runtime"

	"golang.org/x/sys/unix"

	"warrant/internal/profile"
	"warrant/internal/retry"
	"warrant/wire"
)

// Exit statuses of the launcher process. The broker decides from the reply
// and from EOF, never from these; they only keep a refusal from looking
// like a target's own exit status to a human reading ps.
const (
	exitRefused    = 125 // nothing was executed
	exitExecFailed = 127 // every check passed; execve returned an error (as on Linux)
)

// requestFD is the broker's socket: the request arrives on it, the reply
// goes back on it, and the broker's Proceed follows Ready on it. It is
// close-on-exec, so EOF after Proceed means the exec succeeded.
const requestFD = 3

// Main runs the launcher once and returns its exit status. It never
// returns after a successful exec.
func Main() int {
	// The sandbox and exec steps run on one thread (STYLE §3); Seatbelt
	// itself applies to the whole process.
	runtime.LockOSThread()
	out := fdWriter(requestFD)
	p, e := prepare()
	if e != nil {
		_ = wire.WriteFrame(out, refused(e))
		return exitRefused
	}
	if err := wire.WriteFrame(out, p.ready); err != nil {
		// Without Ready the broker records not-executed; so it must be.
		return exitRefused
	}
	errno := awaitProceed(recvRequest)
	if errno == 0 {
		errno, _ = unix.Exec(p.path, p.argv, p.env).(unix.Errno)
	}
	_ = wire.WriteFrame(out, &wire.ExecFailed{Errno: uint32(errno)})
	return exitExecFailed
}

// awaitProceed reads the broker's one Proceed, sent after Ready once the
// action is durably EXECUTING, and returns 0, or the errno ExecFailed
// reports (EPROTO for anything else, descriptors included): nothing is
// executed without it.
func awaitProceed(recv recvFunc) unix.Errno {
	r := &rightsReader{recv: recv}
	m, err := wire.ReadFrame(r, wire.MaxLauncherFrame, wire.SpawnChannel)
	if _, ok := m.(*wire.Proceed); err != nil || !ok || len(r.fds) > 0 {
		return unix.EPROTO
	}
	return 0
}

// prepared is a plan whose every check passed and whose sandbox is in
// force.
type prepared struct {
	*plan
	ready *wire.Ready
}

// prepare performs every step before exec, in this fixed order: read and
// admit the request; verify the workspace and cwd; open and fstat the
// pinned files; set up stdio, session, rlimits and descriptors; apply the
// Seatbelt profile; hash the pinned files by descriptor. The first failure
// refuses; nothing is retried and nothing falls back.
func prepare() (*prepared, *wire.Error) {
	req, fds, e := readRequest(recvRequest)
	if e != nil {
		return nil, e
	}
	p, e := admit(req, len(fds))
	if e != nil {
		return nil, e
	}
	if e := checkStdio(fds); e != nil {
		return nil, e
	}
	ws, e := checkWorkspace(fds[0], req.Workspace)
	if e != nil {
		return nil, e
	}
	cwd, e := enterCwd(fds[0], req.Cwd)
	if e != nil {
		return nil, e
	}
	pinned := []wire.FileIdentity{req.Executable}
	if req.Interpreter != nil {
		pinned = append(pinned, req.Interpreter.File)
	}
	var pfds []int
	for _, f := range pinned {
		fd, e := openPinned(f)
		if e != nil {
			return nil, e
		}
		pfds = append(pfds, fd)
	}
	if e := setupProcess(fds[1], fds[2], profile.Of(req.Profile)); e != nil {
		return nil, e
	}
	if err := applyProfile(p.profile); err != nil {
		return nil, wire.Errorf(wire.CodeSandboxUnavailable, "apply the Seatbelt profile: %v", err)
	}
	ready := &wire.Ready{
		SeatbeltDigest: profileDigest(p.profile),
		Binding:        wire.Unbound,
		Workspace:      ws,
		Cwd:            cwd,
	}
	for i, f := range pinned {
		sum, e := measure(pfds[i], f)
		if e != nil {
			return nil, e
		}
		if i == 0 {
			ready.ExecutedSHA256 = sum
		} else {
			ready.InterpreterSHA256 = sum
		}
	}
	last := len(pinned) - 1 // the file execve runs
	if e := refuseScript(pfds[last], pinned[last]); e != nil {
		return nil, e
	}
	return &prepared{plan: p, ready: ready}, nil
}

// recvRequest is recvmsg(2) on the request socket.
func recvRequest(p, oob []byte, flags int) (int, int, int, error) {
	n, oobn, rf, _, err := unix.Recvmsg(requestFD, p, oob, flags)
	return n, oobn, rf, err
}

// fdWriter writes to a descriptor, retrying short writes, and EINTR within
// internal/retry's bound.
type fdWriter int

func (w fdWriter) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		var n int
		err := retry.EINTR(func() (err error) { n, err = unix.Write(int(w), b[done:]); return err })
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}
