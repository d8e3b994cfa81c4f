//go:build linux

package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/broker/lifecycle"
	"warrant/internal/envpolicy"
	"warrant/internal/fsid"
	"warrant/internal/snapshot"
	"warrant/wire"
)

// The harness plays the broker for the real launcher binary: it measures
// identities with internal/fsid, builds a SpawnRequest, passes the
// descriptors with SCM_RIGHTS over a SOCK_SEQPACKET socketpair, starts the
// launcher with fd 3 = the socket and the environment the broker gives it
// (lifecycle.LauncherEnv), reads the reply, then the target's output, and
// waits.

// runtimePaths is the read+execute set of the test policy, as the
// broker's default names it: canonical (on a merged-/usr host /bin is a
// symlink, which the launcher would refuse to follow), each pinned.
var runtimePaths = []string{"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc"}

// grant adds paths to req's read+execute set, canonical and pinned as the
// broker's policy does it.
func grant(t testing.TB, req *wire.SpawnRequest, paths ...string) {
	t.Helper()
	p := &req.Policy
	for _, path := range paths {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			continue // absent on this host
		}
		if slices.Contains(p.ReadExec, real) {
			continue
		}
		p.ReadExec = append(p.ReadExec, real)
		fd, err := unix.Openat2(unix.AT_FDCWD, real, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
		if err != nil {
			t.Fatalf("pin %s: %v", real, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		p.Pins = append(p.Pins, wire.PathPin{Path: real, Dev: st.Dev, Ino: st.Ino})
	}
	slices.SortFunc(p.Pins, func(a, b wire.PathPin) int { return strings.Compare(a.Path, b.Path) })
}

// launchSafety only stops a wedged launcher from hanging the suite; no
// test asserts on time.
const launchSafety = 2 * time.Minute

// action is the host side of one action: a workspace and the private HOME
// and TMPDIR beside it, and a directory outside all of them.
type action struct {
	t                    testing.TB
	Workspace, Home, Tmp string
	Outside              string // neither granted nor beneath a grant
}

func newAction(t testing.TB) *action {
	t.Helper()
	root := t.TempDir()
	a := &action{t: t}
	for _, d := range []*string{&a.Workspace, &a.Home, &a.Tmp, &a.Outside} {
		var err error
		if *d, err = os.MkdirTemp(root, "d"); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// Request returns the request a broker would send for exe (a path, or a
// name on the sanitized PATH) with args, in the workspace root.
func (a *action) Request(exe string, args ...string) *wire.SpawnRequest {
	a.t.Helper()
	path := exe
	if !filepath.IsAbs(exe) {
		path = lookPath(a.t, exe)
	}
	req := &wire.SpawnRequest{
		Protocol:   wire.SpawnProtocol,
		Binding:    wire.SealedSnapshot,
		Argv:       append([]string{exe}, args...),
		Env:        envpolicy.Build(nil, nil, a.Home, a.Tmp),
		Workspace:  dirIdentity(a.t, a.Workspace, a.Workspace),
		Cwd:        dirIdentity(a.t, a.Workspace, "."),
		Executable: fileIdentity(a.t, path),
		Profile:    wire.ProfileShort,
		Policy:     wire.Policy{ReadExec: []string{}, MinLandlockABI: 4},
		Home:       a.Home,
		Tmp:        a.Tmp,
	}
	grant(a.t, req, runtimePaths...)
	return req
}

// lookPath resolves name on the sanitized PATH, as the broker does.
func lookPath(t testing.TB, name string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(envpolicy.SanitizedPath) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Skipf("skip: %s is not installed on %s", name, envpolicy.SanitizedPath)
	return ""
}

// Helper is Request for the static helper program.
func (a *action) Helper(args ...string) *wire.SpawnRequest {
	return a.Request(bins.helper, args...)
}

// copyExecutable copies the program src to a new file dst, mode 0755.
func copyExecutable(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// Path returns name inside the workspace.
func (a *action) Path(name string) string { return filepath.Join(a.Workspace, name) }

// fileIdentity measures the canonical file behind path.
func fileIdentity(t testing.TB, path string) wire.FileIdentity {
	t.Helper()
	canon, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(canon)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := fsid.File(int(f.Fd()), canon)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// dirIdentity measures the directory rel beneath base (rel may be
// absolute, for the workspace itself) and records it under rel.
func dirIdentity(t testing.TB, base, rel string) wire.DirIdentity {
	t.Helper()
	p := rel
	if !filepath.IsAbs(rel) {
		p = filepath.Join(base, rel)
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	id, err := fsid.Dir(fd, rel)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// launch describes one start of the launcher. Only Req is required.
type launch struct {
	Req        *wire.SpawnRequest
	Frame      []byte                // sent instead of Req's encoding
	FDs        func(def []int) []int // rewrites the descriptors sent
	Second     bool                  // queue a second copy of the datagram
	Snapshots  bool                  // the broker passes sealed snapshots (cache hit)
	Cached     []int                 // pre-made snapshots, duplicated for each launch (cache hit)
	Env        []string              // the launcher's own environment (default the broker's: lifecycle.LauncherEnv)
	Wrap       []string              // a command line in front of the launcher
	ExtraFiles []*os.File            // inherited by the launcher from fd 4 on
	// Warm starts the launcher and waits this long before sending the
	// request, as the daemon's warm launcher is sent its request; Waiting,
	// if set, then runs with the launcher's pid, the request not yet sent.
	Warm    time.Duration
	Waiting func(t testing.TB, sock, pid int)
	// Prepare is sent, encoded, as its own datagram before the request;
	// with Warm, right after the launcher starts, as the daemon sends its
	// warm launcher the Prepare of the slot's shape.
	Prepare       *wire.Prepare
	PrepareFrames [][]byte // sent instead of Prepare's encoding, one datagram each
	PrepareFDs    bool     // the request's descriptors come with the Prepare too
	Hangup        bool     // no request: the broker shuts its end for writing instead
	// AfterReady is what the broker does once Ready has come from the
	// launcher pid, on its end of the socket (default: send Proceed, as
	// the broker does once the action is durably EXECUTING).
	AfterReady func(t testing.TB, sock, pid int)
}

// sendProceed is the broker's Proceed: the launcher may execute.
func sendProceed(t testing.TB, sock, _ int) {
	frame, err := wire.EncodeFrame(&wire.Proceed{})
	if err == nil {
		err = unix.Sendmsg(sock, frame, nil, nil, 0)
	}
	if err != nil {
		t.Fatalf("send proceed: %v", err)
	}
}

// splice encodes req and replaces the one occurrence of placeholder with
// replacement, re-framing the result: a frame that wire would never encode
// itself, which is how the tests speak for a hostile broker.
func splice(t *testing.T, req *wire.SpawnRequest, placeholder, replacement string) []byte {
	t.Helper()
	frame, err := wire.EncodeFrame(req)
	if err != nil {
		t.Fatal(err)
	}
	body := frame[4:]
	if bytes.Count(body, []byte(placeholder)) != 1 {
		t.Fatalf("splice: %q is not unique in the frame", placeholder)
	}
	return reframe(bytes.Replace(body, []byte(placeholder), []byte(replacement), 1))
}

// reframe puts a 4-byte big-endian length in front of body.
func reframe(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// result is what the broker observed.
type result struct {
	Reply          wire.Message
	Execed         bool // EOF on the reply socket right after Ready
	Stdout, Stderr string
	State          *os.ProcessState
	Sent           time.Time // when the request was sent
}

// Run launches req with the defaults.
func (a *action) Run(req *wire.SpawnRequest) *result {
	return a.Launch(launch{Req: req})
}

// Launch plays the broker for one launcher run.
func (a *action) Launch(l launch) *result {
	t := a.t
	t.Helper()
	fds, stdout, stderr := a.descriptors(l)
	frame, prepares := l.Frame, l.PrepareFrames
	if l.Prepare != nil && prepares == nil {
		b, err := wire.EncodeFrame(l.Prepare)
		if err != nil {
			t.Fatal(err)
		}
		prepares = [][]byte{b}
	}
	if frame == nil && !l.Hangup {
		var err error
		if frame, err = wire.EncodeFrame(l.Req); err != nil {
			t.Fatal(err)
		}
	}
	toClose := map[int]bool{}
	for _, fd := range fds {
		toClose[fd] = true
	}
	if l.FDs != nil {
		fds = l.FDs(fds)
	}
	for _, fd := range fds {
		toClose[fd] = true
	}
	sv, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours := os.NewFile(uintptr(sv[0]), "broker-end")
	theirs := os.NewFile(uintptr(sv[1]), "launcher-end")
	defer ours.Close()
	sends := 1
	if l.Second {
		sends = 2
	}
	unix.SetsockoptInt(sv[0], unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 4<<20) // oversized datagrams
	r := &result{}
	prepare := func() {
		var oob []byte
		if l.PrepareFDs {
			oob = unix.UnixRights(fds...)
		}
		for _, b := range prepares {
			if err := unix.Sendmsg(sv[0], b, oob, nil, 0); err != nil {
				t.Fatalf("send the prepare message: %v", err)
			}
		}
	}
	send := func() {
		r.Sent = time.Now()
		if l.Hangup {
			if err := unix.Shutdown(sv[0], unix.SHUT_WR); err != nil {
				t.Fatal(err)
			}
			return
		}
		for range sends {
			if err := unix.Sendmsg(sv[0], frame, unix.UnixRights(fds...), nil, 0); err != nil {
				t.Fatalf("send the request: %v", err)
			}
		}
	}
	if l.Warm == 0 {
		prepare()
		send()
	}
	ctx, cancel := context.WithTimeout(context.Background(), launchSafety)
	defer cancel()
	argv := append(append([]string{}, l.Wrap...), bins.launcher)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = lifecycle.LauncherEnv()
	if l.Env != nil {
		cmd.Env = append([]string{}, l.Env...)
	}
	cmd.ExtraFiles = append([]*os.File{theirs}, l.ExtraFiles...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	if l.Warm > 0 {
		prepare()
		time.Sleep(l.Warm)
		if l.Waiting != nil {
			l.Waiting(t, sv[0], cmd.Process.Pid)
		}
		send()
	}
	for fd := range toClose { // the kernel holds its own copies in flight
		unix.Close(fd)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go drain(&wg, stdout, &r.Stdout)
	go drain(&wg, stderr, &r.Stderr)
	if l.AfterReady == nil {
		l.AfterReady = sendProceed
	}
	r.Reply, r.Execed = readReply(t, sv[0], func(t testing.TB, sock int) { l.AfterReady(t, sock, cmd.Process.Pid) })
	wg.Wait()
	cmd.Wait()
	r.State = cmd.ProcessState
	return r
}

// descriptors opens the default descriptors: the workspace, the output
// pipes' write ends and, for a cache hit, the sealed snapshots. It returns
// them with the pipes' read ends.
func (a *action) descriptors(l launch) (fds []int, stdout, stderr *os.File) {
	t := a.t
	ws, err := unix.Open(a.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fds = append(fds, ws)
	for _, r := range []**os.File{&stdout, &stderr} {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		*r = os.NewFile(uintptr(p[0]), "output")
		t.Cleanup(func() { (*r).Close() })
		fds = append(fds, p[1])
	}
	for _, fd := range l.Cached {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, dup)
	}
	if l.Snapshots && l.Req != nil {
		l.Req.Snapshots = true
		fds = append(fds, makeSnapshot(t, l.Req.Executable))
		if l.Req.Interpreter != nil {
			fds = append(fds, makeSnapshot(t, l.Req.Interpreter.File))
		}
	}
	return fds, stdout, stderr
}

// makeSnapshot is the broker's snapshot cache: a sealed copy of id.
func makeSnapshot(t testing.TB, id wire.FileIdentity) int {
	f, err := os.Open(id.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, _, err := snapshot.Create(int(f.Fd()), int64(id.Size), filepath.Base(id.Path))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func drain(wg *sync.WaitGroup, r io.Reader, into *string) {
	defer wg.Done()
	var b bytes.Buffer
	io.Copy(&b, r)
	*into = b.String()
}

// readReply reads the launcher's reply: one datagram, or Ready followed
// by ExecFailed; once Ready has come, afterReady plays the broker. It
// returns the last message and whether the socket reached EOF right after
// Ready (the exec closed it).
func readReply(t testing.TB, fd int, afterReady func(testing.TB, int)) (wire.Message, bool) {
	buf := make([]byte, wire.MaxLauncherFrame)
	var last wire.Message
	for i := 0; ; i++ {
		n, err := unix.Read(fd, buf)
		if err == unix.ECONNRESET {
			// The launcher exited with a datagram of ours unread; the
			// error is reported (and cleared) before anything queued.
			n, err = unix.Read(fd, buf)
		}
		if err != nil {
			t.Fatalf("read the reply: %v", err)
		}
		if n == 0 {
			_, isReady := last.(*wire.Ready)
			return last, isReady && i == 1
		}
		if i == 2 {
			t.Fatal("the launcher sent more than two datagrams")
		}
		if last, err = wire.DecodeFrame(buf[:n], wire.MaxLauncherFrame, wire.LauncherChannel); err != nil {
			t.Fatalf("decode the reply: %v", err)
		}
		if _, isReady := last.(*wire.Ready); isReady && i == 0 {
			afterReady(t, fd)
		}
	}
}

// Ready requires that the launcher sent Ready and executed the target.
func (r *result) Ready(t *testing.T) *wire.Ready {
	t.Helper()
	ready, ok := r.Reply.(*wire.Ready)
	if !ok || !r.Execed {
		t.Fatalf("want Ready and exec, got %#v (execed %v); stderr:\n%s", r.Reply, r.Execed, r.Stderr)
	}
	return ready
}

// Refused requires a refusal with code and no exec.
func (r *result) Refused(t *testing.T, code wire.Code) *wire.Refused {
	t.Helper()
	ref, ok := r.Reply.(*wire.Refused)
	if !ok {
		t.Fatalf("want Refused %s, got %#v; stdout %q", code, r.Reply, r.Stdout)
	}
	if ref.Code != code {
		t.Fatalf("want Refused %s, got %s: %s", code, ref.Code, ref.Detail)
	}
	if r.Execed || r.State.ExitCode() != 125 || r.Stdout != "" {
		t.Fatalf("a refused launch ran something: exit %v, stdout %q", r.State, r.Stdout)
	}
	return ref
}

// Lines returns the target's stdout lines.
func (r *result) Lines() []string {
	return strings.Split(strings.TrimRight(r.Stdout, "\n"), "\n")
}
