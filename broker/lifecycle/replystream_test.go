//go:build linux || darwin

package lifecycle

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// streamPair returns the broker's end of a real SOCK_STREAM socketpair
// (what the darwin launcher speaks) and the raw fd of the launcher's end.
func streamPair(t *testing.T) (*net.UnixConn, int) {
	t.Helper()
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(p[0]), "broker-end")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); unix.Close(p[1]) })
	return c.(*net.UnixConn), p[1]
}

func frame(t *testing.T, m wire.Message) []byte {
	t.Helper()
	b, err := wire.EncodeFrame(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Ready written in two pieces, then the launcher's end closed: one Ready,
// then io.EOF — the darwin proof of exec.
func TestStreamReplyReadyThenEOF(t *testing.T) {
	c, peer := streamPair(t)
	dir := wire.DirIdentity{Path: "/w", Dev: 1, Ino: 2}
	b := frame(t, &wire.Ready{SeccompDigest: make([]byte, 32), Binding: wire.Unbound, ExecutedSHA256: make([]byte, 32),
		Workspace: dir, Cwd: wire.DirIdentity{Path: ".", Dev: 1, Ino: 2}})
	unix.Write(peer, b[:3])
	unix.Write(peer, b[3:])
	unix.Close(peer)
	m, err := readStreamReply(c)
	if _, ok := m.(*wire.Ready); !ok || err != nil {
		t.Fatalf("first reply = %T, %v; want *wire.Ready", m, err)
	}
	if m, err := readStreamReply(c); err != io.EOF {
		t.Fatalf("second reply = %T, %v; want io.EOF", m, err)
	}
}

// EOF inside a frame is not the clean EOF that proves an exec.
func TestStreamReplyTruncated(t *testing.T) {
	c, peer := streamPair(t)
	b := frame(t, &wire.ExecFailed{Errno: 2})
	unix.Write(peer, b[:len(b)-1])
	unix.Close(peer)
	if m, err := readStreamReply(c); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated reply = %T, %v; want an unexpected-EOF error", m, err)
	}
}

// A descriptor passed with a reply fails the read, and the broker closes
// it: the launcher's end of a pipe we check below sees EOF only once every
// copy of its write end is closed.
func TestStreamReplyRefusesDescriptors(t *testing.T) {
	c, peer := streamPair(t)
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	b := frame(t, &wire.ExecFailed{Errno: 2})
	if err := unix.Sendmsg(peer, b, unix.UnixRights(p[1]), nil, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[1])
	if m, err := readStreamReply(c); err == nil {
		t.Fatalf("reply with a descriptor = %T, want an error", m)
	}
	var buf [1]byte
	if n, err := unix.Read(p[0], buf[:]); n != 0 || err != nil {
		t.Fatalf("read from the pipe = %d, %v; want EOF (the passed write end closed by the broker)", n, err)
	}
}
