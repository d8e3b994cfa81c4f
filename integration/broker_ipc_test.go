//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// ipcScript is the target of the IPC tests, one mode per test. It prints
// one line per attempt ("NAME ok" or "NAME ERRNO"), and between its
// attempts and its last report it writes "tried" in its cwd and waits for
// the host's "host-done" there, so that the host acts while what the
// target set up still holds.
const ipcScript = `
import ctypes, errno, fcntl, os, signal, socket, struct, sys, threading, time

def attempt(name, f):
    try:
        f()
        print(name, "ok", flush=True)
        return True
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno), flush=True)
        return False

def handshake():
    with open("tried", "w") as f:
        f.write("tried\n")
    while not os.path.exists("host-done"):
        time.sleep(0.01)

mode = sys.argv[1]
if mode == "socketpair":
    path, stream = sys.argv[2], sys.argv[3]
    for name, typ in (("dgram", socket.SOCK_DGRAM), ("raw", socket.SOCK_RAW),
                      ("dgram_cloexec", socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)):
        pair = []
        if attempt("socketpair_" + name, lambda: pair.extend(socket.socketpair(socket.AF_UNIX, typ))):
            a = pair[0]
            attempt(name + "_sendto", lambda: a.sendto(b"x", path))
            attempt(name + "_connect_send", lambda: (a.connect(path), a.send(b"y")))
    for name, typ in (("stream", socket.SOCK_STREAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK),
                      ("seqpacket", socket.SOCK_SEQPACKET)):
        pair = []
        if attempt("socketpair_" + name, lambda: pair.extend(socket.socketpair(socket.AF_UNIX, typ))):
            a, b = pair
            a.send(b"ping")
            time.sleep(0.05)
            print(name + "_peer", b.recv(16).decode(), flush=True)
            if attempt(name + "_sendto", lambda: a.sendto(b"z", path)):
                time.sleep(0.05)
                print(name + "_sendto_peer", b.recv(16).decode(), flush=True)
            attempt(name + "_connect", lambda: a.connect(stream))
    handshake()
elif mode == "lease":
    victim, d = sys.argv[2], sys.argv[3]
    signal.signal(signal.SIGIO, signal.SIG_IGN)  # an attacker ignores the lease-break notice
    hits = []
    signal.signal(signal.SIGUSR1, lambda s, f: hits.append(s))
    fd = os.open(victim, os.O_RDONLY)
    attempt("setlease_wrlck", lambda: fcntl.fcntl(fd, 1024, fcntl.F_WRLCK))
    attempt("setlease_rdlck", lambda: fcntl.fcntl(fd, 1024, fcntl.F_RDLCK))
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.fcntl(dfd, 10, signal.SIGUSR1)  # F_SETSIG
    attempt("notify", lambda: fcntl.fcntl(dfd, 1026, 0x4 | 0x80000000))  # DN_CREATE | DN_MULTISHOT
    handshake()
    time.sleep(0.2)
    print("notified", len(hits), flush=True)
elif mode == "inotify":
    libc = ctypes.CDLL(None, use_errno=True)
    IN_CREATE, IN_MOVED_TO, IN_DONT_FOLLOW = 0x100, 0x80, 0x2000000
    ifd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if ifd < 0:
        print("inotify_init1", errno.errorcode.get(ctypes.get_errno()), flush=True)
        sys.exit(1)
    def watch(name, p, flags=0):
        wd = libc.inotify_add_watch(ifd, p.encode(), IN_CREATE | IN_MOVED_TO | flags)
        print("watch_" + name, "ok" if wd >= 0 else errno.errorcode.get(ctypes.get_errno()), flush=True)
    outside, readonly = sys.argv[2], sys.argv[3]
    os.symlink(outside, "link-out")
    opath = os.open(outside, os.O_PATH | os.O_DIRECTORY)
    watch("outside", outside)
    watch("readonly", readonly)
    watch("symlink_out", "link-out")
    watch("procfd_out", "/proc/self/fd/%d" % opath)
    watch("workspace", ".")
    os.mkdir("sub")
    watch("sub_nofollow", "sub", IN_DONT_FOLLOW)
    os.mkdir("sub2")
    t = threading.Thread(target=lambda: watch("thread", "sub2"))  # the notification names a thread, not the process
    t.start()
    t.join()
    FAN_CLASS_NOTIF, FAN_REPORT_FID, FAN_MARK_ADD, FAN_CREATE, FAN_EVENT_ON_CHILD = 0, 0x200, 0x1, 0x100, 0x08000000
    fan = libc.fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID, os.O_RDONLY)
    print("fanotify_init", "ok" if fan >= 0 else errno.errorcode.get(ctypes.get_errno()), flush=True)
    libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
    r = libc.fanotify_mark(max(fan, 0), FAN_MARK_ADD, FAN_CREATE | FAN_EVENT_ON_CHILD, -100, outside.encode())
    print("fanotify_mark", "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno()), flush=True)
    open("made-inside", "w").close()
    open("sub/made-in-sub", "w").close()
    open("sub2/made-by-thread", "w").close()
    handshake()
    time.sleep(0.2)
    buf = b""
    while True:
        try:
            buf += os.read(ifd, 65536)
        except BlockingIOError:
            break
    i = 0
    while i < len(buf):
        wd, mask, cookie, n = struct.unpack_from("iIII", buf, i)
        print("event", buf[i + 16:i + 16 + n].rstrip(b"\0").decode(), flush=True)
        i += 16 + n
`

// ipcRun is one run of ipcScript: as root through the shared daemon, or
// as uid 65534 through its own `broker run`.
type ipcRun struct {
	t  *testing.T
	ws string
	// tool is the script's own directory: outside the writable scope,
	// readable by the target (the policy grants a program's directory).
	tool   string
	script string
	// start runs the script with args and returns once it wrote "tried";
	// end tells it the host is done and returns its output.
	start func(args ...string)
	end   func() string
}

// newIPCRun lays out the script in a directory of its own (every
// directory on the way open to uid 65534) and the way to run it.
func newIPCRun(t *testing.T, asUser bool) *ipcRun {
	t.Helper()
	py := lookPath(t, "python3")
	if asUser && os.Geteuid() != 0 {
		t.Skip("skip: needs root to switch to an unprivileged uid")
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := &ipcRun{t: t, tool: filepath.Join(base, "tool")}
	r.script = filepath.Join(r.tool, "ipc")
	if err := os.Mkdir(r.tool, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.script, []byte("#!"+py+"\n"+ipcScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if !asUser {
		d := shared(t)
		a := d.newAgent(t)
		r.ws = a.WS
		var h string
		r.start = func(args ...string) {
			h = a.Start(a.request(wire.ProfileShort, r.script, args...), 1)
			a.awaitRunning(h, filepath.Join(a.WS, "tried"), 1)
		}
		r.end = func() string {
			r.hostDone()
			res := a.End(h)
			if res.Outcome != wire.Exited || res.ExitCode == nil || *res.ExitCode != 0 {
				t.Fatalf("the target must run to its end: %s %+v\n%s\n%s", res.Outcome, res.Error, res.Stdout.Text, res.Stderr.Text)
			}
			return res.Stdout.Text
		}
		return r
	}
	u := asNobody(t)
	r.ws = u.ws
	var (
		out  bytes.Buffer
		done = make(chan error, 1)
	)
	r.start = func(args ...string) {
		cmd := u.command(filepath.Join(u.bin, "broker"), append([]string{"run", "--approve", "--json", "--workspace", u.ws, "--", r.script}, args...)...)
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		deadline := time.Now().Add(daemonSafety)
		for time.Now().Before(deadline) {
			select {
			case err := <-done:
				t.Fatalf("broker run as uid %d ended before the target was set up: %v\n%s", nobody, err, out.String())
			case <-time.After(5 * time.Millisecond):
			}
			if b, _ := os.ReadFile(filepath.Join(u.ws, "tried")); len(b) > 0 {
				return
			}
		}
		t.Fatalf("the target never got set up as uid %d", nobody)
	}
	r.end = func() string {
		r.hostDone()
		err := <-done
		var res runJSON
		if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
			t.Fatalf("broker run as uid %d: %v %v\n%s", nobody, err, jerr, out.String())
		}
		if res.Outcome != "exited" || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("the target must run to its end as uid %d: %s %+v\n%s\n%s", nobody, res.Outcome, res.Error, res.Stdout.Text, res.Stderr.Text)
		}
		return res.Stdout.Text
	}
	return r
}

func (r *ipcRun) hostDone() {
	if err := os.WriteFile(filepath.Join(r.ws, "host-done"), nil, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// outsideDir makes a directory outside every grant that uid 65534 may
// read.
func outsideDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "outside")
	if err := os.Chmod(filepath.Dir(d), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// requireAttempts requires each named attempt to have reported want.
func requireAttempts(t *testing.T, out string, want map[string]string) {
	t.Helper()
	got := attempts(out)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, want %q", name, got[name], w)
		}
	}
	if t.Failed() {
		t.Logf("the target's report:\n%s", out)
	}
}

// TestBrokerSocketpairReachesNoListener: a datagram socketpair is the
// only way to name an address from the sandbox (socket() is denied, and
// Landlock below ABI 9 does not mediate pathname unix sockets), so it is
// refused (EPERM, also as SOCK_RAW, which AF_UNIX turns into a datagram
// socket, and with SOCK_CLOEXEC|SOCK_NONBLOCK); a host datagram
// listener outside receives nothing. Stream and seqpacket pairs still
// work between their ends; their connect is the broker's to answer and
// refused (EACCES, as every connect not to an egress proxy), and their
// addressed sendto reaches no one (EISCONN, or the peer).
func TestBrokerSocketpairReachesNoListener(t *testing.T) { socketpairReachesNoListener(t, false) }

// TestBrokerSocketpairReachesNoListenerAsUser: the same as uid 65534.
func TestBrokerSocketpairReachesNoListenerAsUser(t *testing.T) { socketpairReachesNoListener(t, true) }

func socketpairReachesNoListener(t *testing.T, asUser bool) {
	r := newIPCRun(t, asUser)
	sock := filepath.Join(outsideDir(t), "d.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	streamSock := filepath.Join(filepath.Dir(sock), "s.sock")
	sl, err := net.ListenUnix("unix", &net.UnixAddr{Name: streamSock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	for _, p := range []string{sock, streamSock} { // only the sandbox may stop uid 65534
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	r.start("socketpair", sock, streamSock)
	out := r.end()
	// A seqpacket end ignores the address of a sendto and sends to its
	// peer.
	requireAttempts(t, out, map[string]string{
		"socketpair_dgram": "EPERM", "socketpair_raw": "EPERM", "socketpair_dgram_cloexec": "EPERM",
		"socketpair_stream": "ok", "stream_peer": "ping", "stream_sendto": "EISCONN", "stream_connect": "EACCES",
		"socketpair_seqpacket": "ok", "seqpacket_peer": "ping", "seqpacket_sendto": "ok", "seqpacket_sendto_peer": "z",
		"seqpacket_connect": "EACCES",
	})
	if err := sl.SetDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if c, err := sl.Accept(); err == nil {
		c.Close()
		t.Errorf("the host stream listener outside accepted a connection from the sandbox")
	}
	if err := ln.SetReadDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _, err := ln.ReadFromUnix(buf); err == nil {
		t.Fatalf("the host listener outside received %q from the sandbox\n%s", buf[:n], out)
	}
}

// TestBrokerLeaseAndNotifyRefused: a target cannot take a file lease on
// a file its uid owns outside the writable scope (F_SETLEASE, write or
// read: EPERM), so a host open of it returns at once instead of waiting
// for lease-break-time (45 s by default) while the target ignores
// SIGIO; nor set a directory notification (F_NOTIFY: EPERM) on a
// directory it may read, and no signal comes when the host creates a file
// there.
func TestBrokerLeaseAndNotifyRefused(t *testing.T) { leaseAndNotifyRefused(t, false) }

// TestBrokerLeaseAndNotifyRefusedAsUser: the same as uid 65534, on a
// file it owns.
func TestBrokerLeaseAndNotifyRefusedAsUser(t *testing.T) { leaseAndNotifyRefused(t, true) }

func leaseAndNotifyRefused(t *testing.T, asUser bool) {
	r := newIPCRun(t, asUser)
	victim := filepath.Join(r.tool, "victim")
	if err := os.WriteFile(victim, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if asUser {
		if err := os.Chown(victim, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	r.start("lease", victim, r.tool)
	opened := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		if f, err := os.OpenFile(victim, os.O_RDWR, 0); err == nil {
			f.Close()
		}
		opened <- time.Since(start)
	}()
	var blocked bool
	select {
	case d := <-opened:
		t.Logf("the host's open took %s", d)
	case <-time.After(2 * time.Second):
		blocked = true
	}
	if err := os.WriteFile(filepath.Join(r.tool, "host-made"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := r.end()
	if blocked {
		t.Errorf("the host's open of %s blocked over 2 s: the target holds a lease (it took %s in all)\n%s", victim, <-opened, out)
	}
	requireAttempts(t, out, map[string]string{"setlease_wrlck": "EPERM", "setlease_rdlck": "EPERM", "notify": "EPERM", "notified": "0"})
	if b, err := os.ReadFile(victim); err != nil || string(b) != "host" {
		t.Errorf("the victim reads %q, %v", b, err)
	}
}

// TestBrokerInotifyOutsideRefused: inotify_add_watch is answered by the
// broker, which adds the watch only on an object beneath the writable
// scope: a directory outside every grant, the read-only directory of the
// program, a symlink in the workspace to the outside one and the
// outside one through /proc/self/fd are refused (EPERM), as are
// fanotify_init and fanotify_mark, and the names the host then creates
// there reach the target in no event. Watches in the workspace work,
// from any thread: the target sees the names it and the host create
// there.
func TestBrokerInotifyOutsideRefused(t *testing.T) { inotifyOutsideRefused(t, false) }

// TestBrokerInotifyOutsideRefusedAsUser: the same as uid 65534.
func TestBrokerInotifyOutsideRefusedAsUser(t *testing.T) { inotifyOutsideRefused(t, true) }

func inotifyOutsideRefused(t *testing.T, asUser bool) {
	r := newIPCRun(t, asUser)
	outside := outsideDir(t)
	secret, readonly, inside := "host-secret-"+token(t), "host-ro-"+token(t), "host-inside-"+token(t)
	r.start("inotify", outside, r.tool)
	for _, p := range []string{filepath.Join(outside, secret), filepath.Join(r.tool, readonly), filepath.Join(r.ws, inside)} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := r.end()
	requireAttempts(t, out, map[string]string{
		"watch_outside": "EPERM", "watch_readonly": "EPERM", "watch_symlink_out": "EPERM", "watch_procfd_out": "EPERM",
		"watch_workspace": "ok", "watch_sub_nofollow": "ok", "watch_thread": "ok", "fanotify_init": "EPERM", "fanotify_mark": "EPERM",
	})
	events := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(l, "event "); ok {
			events[name] = true
		}
	}
	for _, leaked := range []string{secret, readonly} {
		if events[leaked] {
			t.Errorf("the target learned %q, created by the host outside the writable scope", leaked)
		}
	}
	for _, seen := range []string{"made-inside", inside, "made-in-sub", "made-by-thread"} {
		if !events[seen] {
			t.Errorf("the workspace watch did not see %q\n%s", seen, out)
		}
	}
}
