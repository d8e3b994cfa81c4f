package linux

import (
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"warrant/internal/envpolicy"
	"warrant/internal/retry"
	"warrant/wire"
)

// maxFDs is more than any request may carry, so that a smuggled extra
// descriptor is seen and refused instead of truncating the control data.
const maxFDs = 8

// requestBuf holds the largest valid request datagram, wire's frame (a
// 4-byte big-endian length, then a body of at most MaxLauncherFrame
// bytes), and one spare byte: a longer datagram is refused either way, by
// MSG_TRUNC or by DecodeFrame's cap.
const requestBuf = 4 + wire.MaxLauncherFrame + 1

// received holds the descriptors that came with the request, in the order
// wire.SpawnRequest documents; an absent snapshot is -1.
type received struct {
	workspace, stdout, stderr int
	exeSnap, interpSnap       int
}

// readRequest performs step 2: it reads one SpawnRequest datagram with
// its descriptors from sock, after a Prepare if one comes first, and
// checks everything it can about them. The request's /etc entries are
// granted in rules: the Prepare's, which must be the request's, or else
// the request's now, so that both are opened with the same privileges.
func readRequest(sock int, rules *fsRules) (*wire.SpawnRequest, *received, error) {
	if err := checkSocket(sock); err != nil {
		return nil, nil, err
	}
	m, fds, err := readMessage(sock)
	if prep, ok := m.(*wire.Prepare); ok {
		if len(fds) > 0 {
			return nil, nil, bad("descriptors came with the Prepare")
		}
		if err := rules.prepare(prep); err != nil {
			return nil, nil, err
		}
		m, fds, err = readMessage(sock)
	}
	if err == nil {
		err = refuseSecond(sock)
	}
	if err != nil {
		return nil, nil, err
	}
	req, ok := m.(*wire.SpawnRequest)
	if !ok {
		return nil, nil, bad("the message is %s, not a request", m.Type())
	}
	if err := envpolicy.Check(req.Env, req.Home, req.Tmp, req.EgressPort); err != nil {
		return nil, nil, bad("%v", err)
	}
	if len(fds) != req.FDCount() {
		return nil, nil, bad("the request carries %d descriptors, want %d", len(fds), req.FDCount())
	}
	if rules.prepared == nil {
		err = rules.prepare(req.Policy.Prepared())
	} else if !slices.Equal(rules.prepared.Entries, req.Policy.Prepared().Entries) {
		err = bad("the request's /etc entries are not the ones prepared")
	}
	if err != nil {
		return nil, nil, err
	}
	r := &received{workspace: fds[0], stdout: fds[1], stderr: fds[2], exeSnap: -1, interpSnap: -1}
	if len(fds) > 3 {
		r.exeSnap = fds[3]
	}
	if len(fds) > 4 {
		r.interpSnap = fds[4]
	}
	return req, r, r.checkTypes()
}

// readMessage reads one datagram and its descriptors from sock and
// decodes it.
func readMessage(sock int) (wire.Message, []int, error) {
	buf := make([]byte, requestBuf)
	oob := make([]byte, unix.CmsgSpace(4*maxFDs))
	n, oobn, flags, err := recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeIOFailed, "read the request: %v", err)
	}
	fds, err := parseRights(oob[:oobn])
	switch {
	case err != nil:
		return nil, nil, err
	case flags&unix.MSG_CTRUNC != 0:
		return nil, nil, bad("the request's control data was truncated")
	case flags&unix.MSG_TRUNC != 0:
		return nil, nil, bad("the request exceeds %d bytes", wire.MaxLauncherFrame)
	case n == 0:
		return nil, nil, bad("no request: empty datagram or end of stream")
	}
	m, err := wire.DecodeFrame(buf[:n], wire.MaxLauncherFrame, wire.SpawnChannel)
	if err != nil {
		return nil, nil, bad("decode the request: %v", err)
	}
	return m, fds, nil
}

// checkSocket requires fd to be a connected AF_UNIX SOCK_SEQPACKET socket
// whose peer is our parent, running as our uid, and marks it close-on-exec.
func checkSocket(fd int) error {
	if !isSeqpacket(fd) {
		return bad("fd %d is not a SOCK_SEQPACKET socket", fd)
	}
	dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil || dom != unix.AF_UNIX {
		return bad("fd %d is not a unix socket", fd)
	}
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return bad("peer credentials of fd %d: %v", fd, err)
	}
	if int(cred.Pid) != os.Getppid() || int(cred.Uid) != os.Getuid() {
		return bad("the request socket's peer (pid %d, uid %d) is not the parent broker", cred.Pid, cred.Uid)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return wire.Errorf(wire.CodeIOFailed, "mark the request socket close-on-exec: %v", err)
	}
	return nil
}

// isSeqpacket reports whether fd is a SOCK_SEQPACKET socket.
func isSeqpacket(fd int) bool {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	return err == nil && typ == unix.SOCK_SEQPACKET
}

// recvmsg is unix.Recvmsg retried on EINTR.
func recvmsg(fd int, p, oob []byte, flags int) (n, oobn, recvflags int, err error) {
	err = retry.EINTR(func() (err error) {
		n, oobn, recvflags, _, err = unix.Recvmsg(fd, p, oob, flags)
		return err
	})
	return n, oobn, recvflags, err
}

// parseRights returns the descriptors of every SCM_RIGHTS message in oob.
// Any other control message is refused.
func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, bad("parse the request's control data: %v", err)
	}
	var fds []int
	for i := range msgs {
		if msgs[i].Header.Level != unix.SOL_SOCKET || msgs[i].Header.Type != unix.SCM_RIGHTS {
			return nil, bad("unexpected control message level %d type %d", msgs[i].Header.Level, msgs[i].Header.Type)
		}
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return nil, bad("parse passed descriptors: %v", err)
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

// refuseSecond refuses when a second datagram is already queued: the
// broker sends Proceed only once it has read Ready (awaitProceed).
func refuseSecond(sock int) error {
	var one [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, err := recvmsg(sock, one[:], oob, unix.MSG_DONTWAIT|unix.MSG_PEEK|unix.MSG_CMSG_CLOEXEC)
	if err == nil && (n > 0 || oobn > 0) {
		return bad("a second message follows the request")
	}
	if err != nil && err != unix.EAGAIN {
		return wire.Errorf(wire.CodeIOFailed, "check for a second message: %v", err)
	}
	return nil
}

// checkTypes fstat-checks each received descriptor against its role.
func (r *received) checkTypes() error {
	if err := checkType(r.workspace, "workspace", unix.S_IFDIR); err != nil {
		return err
	}
	for _, fd := range []int{r.stdout, r.stderr} {
		if err := checkType(fd, "output", unix.S_IFIFO); err != nil {
			return err
		}
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil || fl&unix.O_ACCMODE == unix.O_RDONLY {
			return bad("output descriptor %d is not open for writing", fd)
		}
	}
	for _, fd := range []int{r.exeSnap, r.interpSnap} {
		if fd < 0 {
			continue
		}
		if err := checkType(fd, "snapshot", unix.S_IFREG); err != nil {
			return err
		}
	}
	return nil
}

func checkType(fd int, role string, want uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return bad("fstat the %s descriptor: %v", role, err)
	}
	if st.Mode&unix.S_IFMT != want {
		return bad("the %s descriptor has file type %#o, want %#o", role, st.Mode&unix.S_IFMT, want)
	}
	return nil
}

// bad is a refusal of a malformed or hostile request.
func bad(format string, args ...any) error {
	return wire.Errorf(wire.CodeArgumentsInvalid, format, args...)
}
