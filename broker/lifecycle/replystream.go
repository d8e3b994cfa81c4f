//go:build linux || darwin

package lifecycle

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// replyStream reads the launcher's replies from a SOCK_STREAM socket (the
// darwin launcher's; macOS has no SOCK_SEQPACKET for AF_UNIX) and fails
// on any descriptor the launcher tries to pass, closing it.
type replyStream struct{ c *net.UnixConn }

func (r replyStream) Read(p []byte) (int, error) {
	oob := make([]byte, unix.CmsgSpace(4*8))
	n, oobn, flags, _, err := r.c.ReadMsgUnix(p, oob)
	if oobn > 0 {
		closeRights(oob[:oobn])
		return 0, errors.New("the launcher sent descriptors")
	}
	if flags&unix.MSG_CTRUNC != 0 {
		return 0, errors.New("the launcher sent truncated control data")
	}
	if errors.Is(err, io.EOF) {
		return n, io.EOF // bare, so that io.ReadFull can tell a torn frame
	}
	if err != nil {
		return n, err
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// readStreamReply reads one framed launcher message. A bare io.EOF (the
// launcher closed its end between frames) is returned as is: after Ready,
// that is the proof of a successful exec. EOF inside a frame is an error.
func readStreamReply(c *net.UnixConn) (wire.Message, error) {
	c.SetReadDeadline(time.Now().Add(replyBound))
	m, err := wire.ReadFrame(replyStream{c}, wire.MaxLauncherFrame, wire.LauncherChannel)
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		return nil, fmt.Errorf("read launcher reply: %w", err)
	}
	return m, nil
}
