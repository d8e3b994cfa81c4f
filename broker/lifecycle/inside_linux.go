package lifecycle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// launch starts a launcher of path in a's cgroups (in none when a is
// nil): in its v2 directory by CLONE_INTO_CGROUP, and born in its v1
// directories (inside) or, where that cannot be done, moved into them
// (place) before anything is sent to it. On error no launcher is left
// running.
func (a *actionCgroup) launch(path string) (*launcher, error) {
	if a == nil {
		return startLauncher(path, -1)
	}
	var l *launcher
	born, err := a.inside(func() (err error) {
		l, err = startLauncher(path, a.fd)
		return err
	})
	if err != nil {
		if l != nil { // started, but its thread did not come back
			l.abandon()
		}
		return nil, err
	}
	if born {
		return l, nil
	}
	if l, err = startLauncher(path, a.fd); err != nil {
		return nil, err
	}
	if err := a.place(l.pid); err != nil {
		l.abandon()
		return nil, fmt.Errorf("place the launcher in the action's cgroups: %w", err)
	}
	return l, nil
}

// inside runs start on an OS thread of its own that has moved itself into
// a's cgroup v1 directories, so that the process start forks is born in
// them, and that moves back to where it was before it is given up. A
// thread that moves itself alone (0 written to a tasks file) does not take
// cgroup_threadgroup_rwsem for writing, while a write of a pid (a
// cgroup.procs write of the launcher) waits for that lock's RCU grace
// period once no move was made for a few milliseconds
// (BenchmarkLaunchIntoCgroups measures both). Nothing else of the broker
// joins the thread there: the Go runtime never clones a thread from a
// locked one (newm hands that to its template thread, which LockOSThread
// has started by then), and the tasks writes are direct system calls of
// the calling thread (cgroupfs files are not polled). The process's main
// thread never enters (enter). While the thread is inside, the action's
// cgroup.procs lists the broker's own pid: nothing reads a cgroup to end
// what it lists while its launch is under way (the launcher is ended by
// its pidfd). A thread that fails to move back is never unlocked, so it
// ends with its goroutine: no thread of the broker stays in an action's
// cgroups. The launch is then an error, and nothing reads those cgroups,
// in which the thread may be listed until it has ended (their directories
// may stay until the next broker removes them). It reports false, having
// run nothing, when a has no v1 directory or the thread cannot open its
// way back or get in.
func (a *actionCgroup) inside(start func() error) (born bool, err error) {
	if len(a.v1()) == 0 || a.mounts == nil {
		return false, nil
	}
	done := make(chan entered, 1)
	go a.enter(start, done, unix.Getpid())
	r := <-done
	return r.born, r.err
}

// entered is what enter did: whether start ran inside, and how it or
// the way back failed.
type entered struct {
	born bool
	err  error
}

// enter does inside's work on the thread it locks, unless that is the
// thread-group leader (tid leader): in cgroup v1 the memory of the whole
// process is charged to the memcg of its leader, and the Go runtime
// parks the main thread for good, rather than end it, should it fail to
// move back. The leader, held, hands the work to a new goroutine, which
// therefore runs on another thread.
func (a *actionCgroup) enter(start func() error, done chan<- entered, leader int) {
	runtime.LockOSThread()
	if unix.Gettid() == leader {
		other := make(chan entered, 1)
		go a.enter(start, other, leader)
		r := <-other
		runtime.UnlockOSThread()
		done <- r
		return
	}
	back, err := a.wayBack()
	if err != nil {
		runtime.UnlockOSThread()
		done <- entered{}
		return
	}
	defer closeAll(back)
	var in []*os.File
	defer func() { closeAll(in) }()
	dirs := a.v1()
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			break
		}
		in = append(in, f)
	}
	ok := len(in) == len(dirs)
	for i := 0; ok && i < len(in); i++ {
		_, err := in[i].WriteString("0")
		ok = err == nil
	}
	var r entered
	if ok {
		r = entered{true, start()}
	}
	for _, f := range back {
		if _, err := f.WriteString("0"); err != nil {
			// This thread stays locked, and ends with the goroutine.
			done <- entered{r.born, errors.Join(r.err, fmt.Errorf("leave the action's cgroups after starting the launcher: %w", err))}
			return
		}
	}
	runtime.UnlockOSThread()
	done <- r
}

// wayBack opens for writing the tasks file of each cgroup v1 directory
// the calling thread is in, in the hierarchies a uses, as the kernel
// lists them in /proc/thread-self/cgroup under a.mounts. A
// directory the mounts do not reach (below no mount's root) has no way
// back.
func (a *actionCgroup) wayBack() ([]*os.File, error) {
	self, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	h := a.mounts.in(self)
	var back []*os.File
	for _, c := range [...]struct{ ctl, dir string }{{"memory", a.mem}, {"pids", a.pids}} {
		if c.dir == "" {
			continue
		}
		if h.v1Mount[c.ctl] == "" || h.v1Self[c.ctl] == "" || h.v1Outside[c.ctl] {
			closeAll(back)
			return nil, fmt.Errorf("no cgroup v1 %s directory of this thread", c.ctl)
		}
		f, err := os.OpenFile(filepath.Join(h.v1Dir(c.ctl), "tasks"), os.O_WRONLY, 0)
		if err != nil {
			closeAll(back)
			return nil, err
		}
		back = append(back, f)
	}
	return back, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
