package darwin

import (
	"encoding/binary"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// The request reader is platform-neutral logic over recvmsg; these tests
// run it on a real AF_UNIX SOCK_STREAM pair with real SCM_RIGHTS, which is
// what the darwin launcher gets on fd 3.

func streamPair(t *testing.T) (send, recv int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func recvOn(fd int) recvFunc {
	return func(p, oob []byte, flags int) (int, int, int, error) {
		n, oobn, rf, _, err := unix.Recvmsg(fd, p, oob, flags|unix.MSG_CMSG_CLOEXEC)
		return n, oobn, rf, err
	}
}

// openFiles returns n descriptors of distinct temporary files.
func openFiles(t *testing.T, n int) []int {
	t.Helper()
	var fds []int
	for range n {
		f, err := os.CreateTemp(t.TempDir(), "fd")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		fds = append(fds, int(f.Fd()))
	}
	return fds
}

func sendmsg(t *testing.T, fd int, b []byte, rights []int) {
	t.Helper()
	var oob []byte
	if len(rights) > 0 {
		oob = unix.UnixRights(rights...)
	}
	if err := unix.Sendmsg(fd, b, oob, nil, 0); err != nil {
		t.Fatal(err)
	}
}

func frame(t *testing.T, m wire.Message) []byte {
	t.Helper()
	b, err := wire.EncodeFrame(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameInode(t *testing.T, a, b int) bool {
	t.Helper()
	var sa, sb unix.Stat_t
	if unix.Fstat(a, &sa) != nil || unix.Fstat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

func TestReadRequestWithRights(t *testing.T) {
	s, r := streamPair(t)
	files := openFiles(t, 3)
	sendmsg(t, s, frame(t, sampleSpawn()), files)
	req, fds, e := readRequest(recvOn(r))
	if e != nil {
		t.Fatal(e)
	}
	if len(fds) != 3 || req.Argv[2] != "all; rm -rf ~" {
		t.Fatalf("got %d fds, argv %q", len(fds), req.Argv)
	}
	for i := range fds {
		if !sameInode(t, fds[i], files[i]) {
			t.Errorf("descriptor %d is not the file that was sent in position %d", fds[i], i)
		}
	}
	if _, e := admit(req, len(fds)); e != nil {
		t.Errorf("a well-formed request was refused: %v", e)
	}
}

func TestReadRequestRefusals(t *testing.T) {
	good := frame(t, sampleSpawn())
	huge := binary.BigEndian.AppendUint32(nil, wire.MaxLauncherFrame+1)
	for _, tc := range []struct {
		name string
		send func(t *testing.T, s int)
		code wire.Code
	}{
		{"too many descriptors", func(t *testing.T, s int) { sendmsg(t, s, good, openFiles(t, maxRights+1)) }, wire.CodeArgumentsInvalid},
		{"rights in two messages", func(t *testing.T, s int) {
			sendmsg(t, s, good[:10], openFiles(t, 2))
			sendmsg(t, s, good[10:], openFiles(t, 1))
		}, wire.CodeArgumentsInvalid},
		{"second request queued", func(t *testing.T, s int) {
			sendmsg(t, s, good, openFiles(t, 3))
			sendmsg(t, s, good, nil)
		}, wire.CodeArgumentsInvalid},
		{"one trailing byte", func(t *testing.T, s int) { sendmsg(t, s, append(good[:len(good):len(good)], 0), openFiles(t, 3)) }, wire.CodeArgumentsInvalid},
		{"garbage body", func(t *testing.T, s int) { sendmsg(t, s, []byte{0, 0, 0, 3, 0xff, 0xff, 0xff}, nil) }, wire.CodeArgumentsInvalid},
		{"frame over the cap", func(t *testing.T, s int) { sendmsg(t, s, huge, nil) }, wire.CodeArgumentsInvalid},
		{"wrong message type", func(t *testing.T, s int) { sendmsg(t, s, frame(t, &wire.ExecFailed{Errno: 2}), nil) }, wire.CodeArgumentsInvalid},
		{"end of stream", func(t *testing.T, s int) { unix.Shutdown(s, unix.SHUT_WR) }, wire.CodeIOFailed},
		{"truncated frame", func(t *testing.T, s int) {
			sendmsg(t, s, good[:len(good)-1], nil)
			unix.Shutdown(s, unix.SHUT_WR)
		}, wire.CodeIOFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := streamPair(t)
			tc.send(t, s)
			req, _, e := readRequest(recvOn(r))
			if e == nil {
				t.Fatalf("accepted: %+v", req)
			}
			t.Logf("refused: %v", e)
			if e.Code != tc.code {
				t.Errorf("got %v, want %v", e, tc.code)
			}
		})
	}
}

// A smuggled fourth descriptor passes the reader (it is seen and kept)
// and is refused by admission.
func TestSmuggledDescriptorRefused(t *testing.T) {
	s, r := streamPair(t)
	sendmsg(t, s, frame(t, sampleSpawn()), openFiles(t, 4))
	req, fds, e := readRequest(recvOn(r))
	if e != nil {
		t.Fatal(e)
	}
	if len(fds) != 4 {
		t.Fatalf("reader saw %d descriptors, want all 4", len(fds))
	}
	if _, e := admit(req, len(fds)); e == nil || e.Code != wire.CodeArgumentsInvalid {
		t.Errorf("admit = %v, want ARGUMENTS_INVALID", e)
	}
}
