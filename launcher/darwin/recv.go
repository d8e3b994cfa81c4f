package darwin

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"warrant/internal/retry"
	"warrant/wire"
)

// recvFunc is recvmsg(2) on the request socket: it fills p and oob and
// returns the byte counts and the message flags.
type recvFunc func(p, oob []byte, flags int) (n, oobn, recvflags int, err error)

// maxRights is how many descriptors one read makes room for. More than
// the launcher ever takes, so that a smuggled extra descriptor is seen and
// refused rather than silently truncated away; a message with even more
// sets MSG_CTRUNC, which is refused too.
const maxRights = 8

// errAncillary marks a refusal about the descriptors that came with the
// request rather than about its bytes.
var errAncillary = errors.New("bad ancillary data")

// rightsReader reads the request stream (macOS has no SOCK_SEQPACKET for
// AF_UNIX, so the launcher socket is SOCK_STREAM with wire's framing) and
// collects every descriptor passed alongside it with SCM_RIGHTS, in
// order. Any other control message, or a truncated one, fails the read.
type rightsReader struct {
	recv     recvFunc
	fds      []int
	messages int // SCM_RIGHTS messages seen
}

func (r *rightsReader) Read(p []byte) (int, error) {
	oob := make([]byte, unix.CmsgSpace(maxRights*4))
	var n, oobn, flags int
	err := retry.EINTR(func() (err error) { n, oobn, flags, err = r.recv(p, oob, 0); return err })
	if err != nil {
		return 0, fmt.Errorf("receive request: %w", err)
	}
	if err := r.control(oob[:oobn], flags); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// control parses one read's ancillary data, keeping every descriptor so
// none can stay open unseen.
func (r *rightsReader) control(oob []byte, flags int) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("%w: parse control message: %v", errAncillary, err)
	}
	var bad error
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			bad = fmt.Errorf("%w: control message of level %d type %d is not SCM_RIGHTS",
				errAncillary, msgs[i].Header.Level, msgs[i].Header.Type)
			continue
		}
		r.fds = append(r.fds, fds...)
		r.messages++
	}
	if flags&unix.MSG_CTRUNC != 0 {
		return fmt.Errorf("%w: control data was truncated (more than %d descriptors)", errAncillary, maxRights)
	}
	return bad
}

// readRequest reads exactly one framed SpawnRequest and its descriptors,
// and checks that nothing else came: one SCM_RIGHTS message, no second
// request queued behind the first. On a refusal the descriptors received so
// far are still returned so the caller can see them (they are never used).
func readRequest(recv recvFunc) (*wire.SpawnRequest, []int, *wire.Error) {
	r := &rightsReader{recv: recv}
	m, err := wire.ReadFrame(r, wire.MaxLauncherFrame, wire.SpawnChannel)
	if err != nil {
		code := wire.CodeArgumentsInvalid
		if !errors.Is(err, wire.ErrMalformed) && !errors.Is(err, errAncillary) {
			code = wire.CodeIOFailed
		}
		return nil, r.fds, wire.Errorf(code, "read request: %v", err)
	}
	req, ok := m.(*wire.SpawnRequest)
	if !ok {
		return nil, r.fds, wire.Errorf(wire.CodeArgumentsInvalid, "the first message is %s, not a request", m.Type())
	}
	if r.messages > 1 {
		return nil, r.fds, wire.Errorf(wire.CodeArgumentsInvalid,
			"descriptors came in %d SCM_RIGHTS messages, want one", r.messages)
	}
	var peek [1]byte
	n, _, _, err := recv(peek[:], nil, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	switch {
	case err == nil && n > 0:
		return nil, r.fds, wire.Errorf(wire.CodeArgumentsInvalid,
			"more bytes follow the request; the launcher takes exactly one")
	case err != nil && err != unix.EAGAIN && err != unix.EWOULDBLOCK:
		return nil, r.fds, wire.Errorf(wire.CodeIOFailed, "check for a second request: %v", err)
	}
	return req, r.fds, nil
}
