package audit

import (
	"errors"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"warrant/internal/auditctl"
	"warrant/wire"
)

// Bounds: access records of a domain not yet matched wait at most
// orphanAge, at most maxOrphans of them; an action's records are drained
// for at most drainMax after its group is gone, ending once none came
// for drainQuiet.
const (
	maxOrphans = 256
	orphanAge  = 5 * time.Second
	drainMax   = 250 * time.Millisecond
	drainQuiet = 30 * time.Millisecond
	rcvBuf     = 4 << 20
)

// Reader reads the kernel's audit records from the read-only multicast
// group, which takes nothing from auditd, and hands each Landlock refusal
// of a watched action's domain to its watch.
type Reader struct {
	fd      int
	mu      sync.Mutex
	watches map[int]*Watch    // by the pid that restricts itself: the action's launcher
	domains map[uint64]*Watch // the domains those created
	orphans []record          // access records of domains not (yet) known, oldest first
	last    time.Time         // when the last record came
	closed  bool
	done    chan struct{}
}

// Watch is one action's share of a Reader.
type Watch struct {
	r       *Reader
	pid     int
	add     func(wire.Denial, time.Time)
	domains []uint64 // its launcher's
}

// Open starts reading: it needs CAP_AUDIT_READ, and records come only
// while audit is enabled (auditctl.Status), which nothing here changes.
func Open() (*Reader, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		return nil, err
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf) != nil { // best effort: records lost are not counted
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
	}
	tv := unix.Timeval{Usec: 100_000} // Close is seen within it
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (groupReadlog - 1)}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	r := &Reader{fd: fd, watches: map[int]*Watch{}, domains: map[uint64]*Watch{}, done: make(chan struct{})}
	go r.loop()
	return r, nil
}

var shared struct {
	once sync.Once
	r    *Reader
	err  error
}

// Shared is the process's one Reader, opened at its first use.
func Shared() (*Reader, error) {
	shared.once.Do(func() { shared.r, shared.err = Open() })
	return shared.r, shared.err
}

// Close stops the reader.
func (r *Reader) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	<-r.done
	unix.Close(r.fd)
}

func (r *Reader) loop() {
	defer close(r.done)
	buf := make([]byte, 1<<16)
	for {
		n, from, err := unix.Recvfrom(r.fd, buf, 0)
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		if closed {
			return
		}
		if err != nil {
			if errors.Is(err, unix.EBADF) {
				return
			}
			continue // EAGAIN (the timeout), EINTR, ENOBUFS (records lost)
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue // only the kernel's
		}
		auditctl.Messages(buf[:n], func(typ uint16, payload []byte) {
			if rec, ok := parse(typ, payload); ok {
				r.take(rec, time.Now())
			}
		})
	}
}

// take hands one record on: an access record to its domain's watch, or
// to the orphans; a domain record of a watched pid's allocation claims
// its domain and the orphans of it.
func (r *Reader) take(rec record, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, rec.came = now, now
	if rec.access {
		if w := r.domains[rec.domain]; w != nil {
			w.add(rec.denial, rec.at)
			return
		}
		for len(r.orphans) > 0 && (len(r.orphans) >= maxOrphans || now.Sub(r.orphans[0].came) > orphanAge) {
			r.orphans = r.orphans[1:]
		}
		r.orphans = append(r.orphans, rec)
		return
	}
	w := r.watches[rec.pid]
	if rec.status != "allocated" || w == nil || r.domains[rec.domain] != nil {
		return
	}
	r.domains[rec.domain], w.domains = w, append(w.domains, rec.domain)
	kept := r.orphans[:0]
	for _, o := range r.orphans {
		if o.domain == rec.domain {
			w.add(o.denial, o.at)
		} else {
			kept = append(kept, o)
		}
	}
	clear(r.orphans[len(kept):])
	r.orphans = kept
}

// Watch hands add every refusal of the domains process pid creates (the
// action's launcher, which restricts itself and execs the target) until
// the Watch is closed.
func (r *Reader) Watch(pid int, add func(wire.Denial, time.Time)) *Watch {
	w := &Watch{r: r, pid: pid, add: add}
	r.mu.Lock()
	r.watches[pid] = w
	r.mu.Unlock()
	return w
}

// Close drains the action's records once its group is gone: every
// refusal was logged as it happened, so only the kernel's sending is
// waited for, until no record came for drainQuiet since Close began, at
// most drainMax (a domain is freed, status=deallocated, only once its
// processes are reaped, and then late: not waited for). Then nothing
// more is handed to the watch.
func (w *Watch) Close() {
	r := w.r
	start := time.Now()
	deadline := start.Add(drainMax)
	for {
		r.mu.Lock()
		last := r.last
		if last.Before(start) {
			last = start
		}
		if time.Since(last) >= drainQuiet || time.Now().After(deadline) {
			if r.watches[w.pid] == w {
				delete(r.watches, w.pid)
			}
			for _, d := range w.domains {
				delete(r.domains, d)
			}
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}
