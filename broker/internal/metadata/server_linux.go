package metadata

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"warrant/broker/internal/denial"
	"warrant/internal/retry"
	"warrant/wire"
)

// Stats counts what one action's notified calls came to.
type Stats struct {
	Done    uint64        // metadata calls and watches performed beneath the writable scope
	Refused uint64        // answered with an error without being performed
	CPU     time.Duration // the serving thread's CPU time, user and system
	Held    time.Duration // answers held back by the budget (budget_linux.go)
	// Denials are the refusals by a rule: the broker's own, and the
	// filter's it counted (counted_linux_amd64.go).
	Denials *wire.Denials
}

// root is one directory of the writable scope, held open, and the path
// the kernel names it by.
type root struct {
	fd   int
	path string
}

// Server answers one action's metadata notifications until Stop.
type Server struct {
	listener int
	roots    []root
	stopR    int // read end of the stop pipe
	stopW    int
	done     chan struct{}
	uid, gid int
	groups   []int
	done_    atomic.Uint64
	refused  atomic.Uint64
	denials  *denial.Log    // safe for concurrent use: Record adds to it too
	hints    bool           // write-intent opens are observed (ObserveWrites, before Serve)
	egress   Egress         // nil: no egress (AllowEgress, before Serve)
	proxy    netip.AddrPort // egress's proxy, unmapped
	cpu      time.Duration  // set by loop as it ends
	held     time.Duration  // loop's alone while it runs
}

// checkListener reports whether fd is a seccomp notification listener.
func checkListener(fd int) error {
	var buf [64]byte
	n, err := unix.Readlink(procFD(fd), buf[:])
	if err != nil {
		return fmt.Errorf("inspect descriptor %d: %w", fd, err)
	}
	if got := string(buf[:n]); got != "anon_inode:seccomp notify" {
		return fmt.Errorf("descriptor %d is %q, not a seccomp notification listener", fd, got)
	}
	return nil
}

// Prepare makes the server for one action's metadata calls, before its
// listener has come (the launcher sends it with Ready, and confines
// itself meanwhile), with the writable scope: the workspace (a directory
// descriptor, duplicated here), the broker's own directories own (the
// action's HOME and TMPDIR, opened as they are named), and the policy's
// read-write paths, each opened without following symlinks and taken
// only if it is still the object of its pin: a path swapped since
// approval is what the launcher refuses to grant, and the server, which
// may open it before or after the launcher looks, must not serve it
// either. A directory that cannot be opened, or is not its pin, is left
// out, so nothing beneath it can be changed. Serve starts answering;
// Stop releases the server, whether it served or not.
func Prepare(workspace int, own []string, policy []wire.PathPin) (*Server, error) {
	s := &Server{listener: -1, done: make(chan struct{}), uid: os.Geteuid(), gid: os.Getegid(),
		denials: denial.New(wire.SourceBroker, wire.SourceFilterCount)}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("metadata: stop pipe: %w", err)
	}
	s.stopR, s.stopW = p[0], p[1]
	s.groups, _ = unix.Getgroups()
	if fd, err := unix.FcntlInt(uintptr(workspace), unix.F_DUPFD_CLOEXEC, 0); err == nil {
		s.addRoot(fd)
	}
	for _, d := range own {
		if fd, err := openDir(d); err == nil {
			s.addRoot(fd)
		}
	}
	for _, pin := range policy {
		fd, err := openDir(pin.Path)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Dev != pin.Dev || st.Ino != pin.Ino {
			unix.Close(fd)
			continue
		}
		s.addRoot(fd)
	}
	return s, nil
}

// openDir opens directory path for reference only, without following a
// symlink on its way.
func openDir(path string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
}

// Serve starts answering the notifications of listener, which must be a
// seccomp notification listener (refused otherwise) whose filter is the
// action's. It takes ownership of listener.
func (s *Server) Serve(listener int) error {
	if err := checkListener(listener); err != nil {
		unix.Close(listener)
		return err
	}
	s.listener = listener
	syncWakeUp(listener)
	go s.loop()
	return nil
}

// addRoot takes fd as a root, named as the kernel names it.
func (s *Server) addRoot(fd int) {
	path, err := fdPath(fd)
	if err != nil || !strings.HasPrefix(path, "/") {
		unix.Close(fd)
		return
	}
	s.roots = append(s.roots, root{fd: fd, path: strings.TrimSuffix(path, "/")})
}

// Stop ends the server, waits for its loop (once Serve started it) and
// releases everything. A notification still pending gets no answer: its
// caller is gone (Stop runs once the action's group is), or, were it not,
// the kernel answers ENOSYS once the listener is closed.
func (s *Server) Stop() Stats {
	if s.listener >= 0 {
		unix.Write(s.stopW, []byte{0})
		<-s.done
		unix.Close(s.listener)
	}
	unix.Close(s.stopR)
	unix.Close(s.stopW)
	for _, r := range s.roots {
		unix.Close(r.fd)
	}
	return Stats{Done: s.done_.Load(), Refused: s.refused.Load(), CPU: s.cpu, Held: s.held, Denials: s.denials.Denials()}
}

// loop waits for notifications or the stop signal. It ends early when the
// filter has no users left (POLLHUP). It has its thread to itself, whose
// CPU time is then the action's metadata work alone, and spends the
// action's budget on every notification before answering it.
func (s *Server) loop() {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	defer func() { s.cpu = threadCPU() - start }()
	b := newBudget(time.Now())
	fds := []unix.PollFd{{Fd: int32(s.listener), Events: unix.POLLIN}, {Fd: int32(s.stopR), Events: unix.POLLIN}}
	var n notif
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return
			}
			continue
		}
		if err := retry.EINTR(func() error { return recv(s.listener, &n) }); err != nil {
			continue // ENOENT: the caller died between poll and receive
		}
		s.held += b.hold()
		r, d := s.answer(&n)
		switch {
		case !r.meta:
		case r.errno == 0:
			s.done_.Add(1)
		default:
			s.refused.Add(1)
		}
		// ENOENT: the caller died, or a signal interrupted its wait and
		// the call will be notified again if it is restarted; either way
		// it was refused nothing.
		if err := send(s.listener, n.ID, r); err == nil && d != nil {
			s.record(*d, time.Now())
		}
	}
}

// record adds one refusal to the action's record. One by the broker must
// be of a class answerRules allows, a hint a write or create of an open
// call (writeOpenCalls) outside the scope (an internal error otherwise,
// as denial.Log's for a source that is not watching): so the classes stay
// within wire.MaxDenialCounts whatever the target does.
func (s *Server) record(d wire.Denial, at time.Time) {
	if d.Source == wire.SourceBroker && (!slices.Contains(answerRules[d.Effect], d.Rule) ||
		d.Family != "" && (d.Effect != wire.EffectConnect || !familyNamed(d.Family))) ||
		d.Source == wire.SourceHint && (d.Effect != wire.EffectWrite && d.Effect != wire.EffectCreate ||
			d.Rule != wire.RuleOutsideScope || d.Family != "" || !slices.Contains(writeOpenCalls, d.Call)) {
		panic(fmt.Sprintf("metadata: internal error: a refusal of class %+v, which answerRules does not allow", d.Class()))
	}
	s.denials.Add(d, at)
}

// fdPath is the path the kernel names an open descriptor's object by.
func fdPath(fd int) (string, error) { return readlink(procFD(fd)) }

// readlink reads a link of at most PATH_MAX bytes.
func readlink(link string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(link, buf)
	if err != nil {
		return "", err
	}
	if n >= len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// beneathAt returns a descriptor of obj's object opened beneath a root
// of the writable scope, proving it lies there, and the path (as the
// kernel names obj) by which it was found there; or EPERM.
func (s *Server) beneathAt(obj int) (int, string, error) {
	p, err := fdPath(obj)
	if err != nil {
		return -1, "", unix.EPERM
	}
	var want unix.Stat_t
	if err := unix.Fstat(obj, &want); err != nil {
		return -1, "", unix.EPERM
	}
	for _, r := range s.roots {
		rel, ok := strings.CutPrefix(p, r.path)
		if !ok || (rel != "" && rel[0] != '/') {
			continue
		}
		rel = strings.TrimPrefix(rel, "/")
		if rel == "" {
			rel = "."
		}
		fd, err := unix.Openat2(r.fd, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			continue
		}
		var got unix.Stat_t
		if unix.Fstat(fd, &got) == nil && got.Dev == want.Dev && got.Ino == want.Ino {
			return fd, p, nil
		}
		unix.Close(fd)
	}
	return -1, "", unix.EPERM
}
