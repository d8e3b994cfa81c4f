package probe

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/broker/lifecycle"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// hostFacts returns the kernel release, whether seccomp filters with
// errno actions are available, and the ptrace policy (ptraceFact).
func hostFacts() (kernel, seccomp, ptrace string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	seccomp = "unavailable"
	if b, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail"); err == nil && bytes.Contains(b, []byte("errno")) {
		seccomp = "available: " + strings.TrimSpace(string(b))
	}
	return kernel, seccomp, ptraceFact()
}

// yamaScope is where Yama keeps its ptrace policy.
const yamaScope = "/proc/sys/kernel/yama/ptrace_scope"

// ptraceFact is Yama's ptrace policy, "yama ptrace_scope N", or "no
// yama" where the kernel has none.
func ptraceFact() string {
	b, err := os.ReadFile(yamaScope)
	if err != nil {
		return "no yama"
	}
	return "yama ptrace_scope " + strings.TrimSpace(string(b))
}

// probeOutputCap bounds what the broker keeps of the target's output.
const probeOutputCap = 1 << 20

// Run runs the battery once under each binding: it sets up the host
// objects in a fresh scratch directory, runs the probe program as one
// action through p, and judges every check on the host; then it checks
// each resource limit the host offers (limitChecks) and egress leases
// (egressChecks, which also say whether the host offers them). The
// report's state is left for Conclude.
func Run(ctx context.Context, p Prober, bind Binding, s Setup) *Report {
	r := &Report{Binding: bind}
	for _, b := range Bindings {
		checks, reason := battery(ctx, p, s, b)
		if reason != "" {
			r.Reason, r.Checks = reason, nil
			return r
		}
		r.Checks = append(r.Checks, checks...)
	}
	checks, limits := limitChecks(ctx, p, s)
	r.Checks, r.Limits = append(r.Checks, checks...), limits
	checks, egress := egressChecks(ctx, p, s, bind.Ptrace)
	r.Checks, r.Features = append(r.Checks, checks...), append(r.Features, egress)
	return r
}

// Bindings are the executable bindings the broker offers: the battery runs
// under each.
var Bindings = []wire.Binding{wire.InPlace, wire.SealedSnapshot}

// battery runs the battery once under binding b, on host objects of its
// own, and returns its checks or why it could not run.
func battery(ctx context.Context, p Prober, s Setup, b wire.Binding) ([]Check, string) {
	h, err := newProbeHost(s.Dir)
	if err != nil {
		return nil, "the probe could not set up its host objects: " + err.Error()
	}
	defer h.close()
	run, out, err := probeRun(ctx, p, h, s, b)
	if err != nil {
		return nil, "the probe action could not be prepared: " + err.Error()
	}
	checks := h.judge(run, out)
	for i := range checks {
		checks[i].Binding = b.String()
	}
	return checks, ""
}

// probeRun has the broker prepare the probe program as an ordinary action
// would be, with the default policy and an environment built from the
// broker's plus the canaries, and runs it.
func probeRun(ctx context.Context, p Prober, h *probeHost, s Setup, b wire.Binding) (lifecycle.Result, string, error) {
	argv := append(append([]string{}, s.Target[1:]...), h.plan.Args()...)
	l, err := s.Prepare(&wire.Submit{Workspace: h.ws, Request: wire.ActionRequest{
		Executable: s.Target[0], Argv: argv, Cwd: ".", Profile: wire.ProfileShort}}, h.canaryEnv, b)
	if err != nil {
		return lifecycle.Result{}, "", err
	}
	l.Handle, l.Home, l.Tmp = "probe-"+h.nonce[:12], h.home, h.tmp
	l.Protect = []wire.ProtectBind{{Path: ".git"}, {Path: ".git/hooks", ReadOnly: true}}
	defer l.Close()
	var stdout, stderr capped
	run := p.Probe(ctx, l, &stdout, &stderr)
	unix.Close(h.leakFD) // the window in which it may leak ends with the action
	h.leakFD = -1
	return run, stdout.String() + "\n" + stderr.String(), nil
}

// capped keeps the first probeOutputCap bytes written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := probeOutputCap - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// probeHost is the host side of one probe: the scratch directories, the
// secrets and canaries, and the objects the target must not reach.
type probeHost struct {
	dir, ws, outside, home, tmp string
	nonce, secret, input        string
	canaryEnv                   []string
	plan                        probeprog.Plan
	tcp, udp, unixPath, abs     int // non-blocking listening sockets
	marker                      *exec.Cmd
	leakFD                      int
	userNS                      string
	meta                        metaStat // the outside metadata victim, as set up
	xattrs                      bool     // the workspace's filesystem takes user.* xattrs
}

func newProbeHost(dir string) (_ *probeHost, err error) {
	h := &probeHost{dir: dir, tcp: -1, udp: -1, unixPath: -1, abs: -1, leakFD: -1,
		nonce: random(""), secret: random("warrant-probe-secret-"), input: random("warrant-probe-input-")}
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	h.ws, h.outside = filepath.Join(h.dir, "workspace"), filepath.Join(h.dir, "outside")
	h.home, h.tmp = filepath.Join(h.dir, "home"), filepath.Join(h.dir, "tmp")
	if err := os.RemoveAll(h.dir); err != nil {
		return nil, fmt.Errorf("clear the probe directory: %w", err)
	}
	for _, d := range []string{h.dir, h.ws, h.outside, h.home, h.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("create probe directory: %w", err)
		}
	}
	files := map[string]string{filepath.Join(h.ws, probeprog.InputFile): h.input,
		filepath.Join(h.outside, probeprog.SecretFile): h.secret, filepath.Join(h.outside, probeprog.LeakFile): "",
		filepath.Join(h.outside, probeprog.MetaFile): "metadata victim"}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return nil, fmt.Errorf("write probe file: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(h.ws, filepath.Dir(probeprog.ProtectedFile)), 0o700); err != nil {
		return nil, fmt.Errorf("create the probe's git hooks: %w", err)
	}
	if err := os.WriteFile(filepath.Join(h.ws, probeprog.ProtectedFile), []byte(probeprog.ProtectedContent), 0o700); err != nil {
		return nil, fmt.Errorf("write the probe's git hook: %w", err)
	}
	if err := os.Symlink(h.outside, filepath.Join(h.ws, probeprog.EscapeLink)); err != nil {
		return nil, fmt.Errorf("create the escape symlink: %w", err)
	}
	if h.meta, err = statMeta(filepath.Join(h.outside, probeprog.MetaFile)); err != nil {
		return nil, err
	}
	h.xattrs = unix.Setxattr(filepath.Join(h.ws, probeprog.InputFile), probeprog.MetaXattr, []byte("host"), 0) == nil
	if h.userNS, err = os.Readlink("/proc/self/ns/user"); err != nil {
		return nil, fmt.Errorf("read the broker's user namespace: %w", err)
	}
	abstract := "warrant-probe-" + h.nonce
	var tcpPort, udpPort int
	if h.tcp, tcpPort, err = probeListen(unix.AF_INET, unix.SOCK_STREAM, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == nil {
		h.udp, udpPort, err = probeListen(unix.AF_INET, unix.SOCK_DGRAM, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	}
	if err == nil {
		h.unixPath, _, err = probeListen(unix.AF_UNIX, unix.SOCK_STREAM, &unix.SockaddrUnix{Name: filepath.Join(h.ws, probeprog.SocketFile)})
	}
	if err == nil {
		h.abs, _, err = probeListen(unix.AF_UNIX, unix.SOCK_STREAM, &unix.SockaddrUnix{Name: "@" + abstract})
	}
	if err != nil {
		return nil, err
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return nil, fmt.Errorf("find sleep for the marker process: %w", err)
	}
	h.marker = exec.Command(sleep, "600")
	if err := h.marker.Start(); err != nil {
		return nil, fmt.Errorf("start the marker process: %w", err)
	}
	// The leaked descriptor: opened without O_CLOEXEC, so that every
	// process this broker starts while it is open inherits it. Only the
	// launcher's close_range stands between it and the target.
	if h.leakFD, err = unix.Open(filepath.Join(h.outside, probeprog.LeakFile), unix.O_RDWR, 0); err != nil {
		return nil, fmt.Errorf("open the leak marker: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(h.leakFD, &st); err != nil {
		return nil, fmt.Errorf("stat the leak marker: %w", err)
	}
	canary := random("warrant-probe-canary-")
	names := []string{"WARRANT_PROBE_CANARY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK", "HTTPS_PROXY"}
	for _, n := range names {
		h.canaryEnv = append(h.canaryEnv, n+"="+canary)
	}
	h.plan = probeprog.Plan{Who: probeprog.Target, Outside: h.outside, TCPPort: tcpPort, UDPPort: udpPort,
		Abstract: abstract, MarkerPID: h.marker.Process.Pid, LeakFD: h.leakFD,
		LeakID: fmt.Sprintf("%d:%d", st.Dev, st.Ino), Canaries: names, Runtime: "/usr/bin/env"}
	return h, nil
}

// close ends the marker, closes every socket and removes the scratch
// directory (the report keeps the evidence).
func (h *probeHost) close() {
	if h.marker != nil && h.marker.Process != nil {
		h.marker.Process.Kill()
		h.marker.Wait()
	}
	for _, fd := range []int{h.tcp, h.udp, h.unixPath, h.abs, h.leakFD} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	os.RemoveAll(h.dir)
}

// probeListen binds a non-blocking socket (a listener for SOCK_STREAM)
// and returns it with its port (0 for unix sockets).
func probeListen(family, typ int, sa unix.Sockaddr) (int, int, error) {
	fd, err := unix.Socket(family, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("create probe socket: %w", err)
	}
	if err = unix.Bind(fd, sa); err == nil && typ == unix.SOCK_STREAM {
		err = unix.Listen(fd, 8)
	}
	var port int
	if err == nil {
		var got unix.Sockaddr
		if got, err = unix.Getsockname(fd); err == nil {
			if in, ok := got.(*unix.SockaddrInet4); ok {
				port = in.Port
			}
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("bind probe socket: %w", err)
	}
	return fd, port, nil
}

// received says what reached a probe socket: "" when nothing did.
func received(fd int, stream bool) string {
	var err error
	if stream {
		var nfd int
		if nfd, _, err = unix.Accept4(fd, unix.SOCK_CLOEXEC); err == nil {
			unix.Close(nfd)
			return "a connection was accepted"
		}
	} else {
		buf := make([]byte, 64)
		var n int
		if n, _, err = unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT); err == nil {
			return fmt.Sprintf("a %d-byte datagram arrived", n)
		}
	}
	if err == unix.EAGAIN {
		return ""
	}
	return "the socket could not be checked: " + err.Error()
}

// markerState describes the marker process: "" while it is alive, not
// stopped and not traced.
func markerState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "the marker process is gone"
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		v = strings.TrimSpace(v)
		switch {
		case k == "State" && v != "" && strings.ContainsRune("TtZX", rune(v[0])): // stopped, traced or ended (not D: paging in)
			return "the marker process is " + v
		case k == "TracerPid" && v != "0":
			return "the marker process is traced by " + v
		}
	}
	return ""
}

// metaStat is what a metadata call could change of a file.
type metaStat struct {
	mode, uid, gid uint32
	mtime, ctime   unix.Timespec
	xattrs         string
}

func statMeta(p string) (metaStat, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return metaStat{}, fmt.Errorf("stat %s: %w", p, err)
	}
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		n = 0
	}
	return metaStat{mode: st.Mode, uid: st.Uid, gid: st.Gid, mtime: st.Mtim, ctime: st.Ctim, xattrs: string(buf[:n])}, nil
}
