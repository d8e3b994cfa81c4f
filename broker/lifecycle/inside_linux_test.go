package lifecycle

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLauncherIsBornInItsCgroups: a launcher started for an action's
// cgroups is in every one of them before anything is sent to it, whether
// it was born there (a thread of this process moved itself in to fork it)
// or, with the thread's way back unknown, moved there after its start;
// and no thread of this process is left in them, nor anywhere but where
// it was.
func TestLauncherIsBornInItsCgroups(t *testing.T) {
	cg := realCgroups(t, "pids")
	if cg.mem == "" && cg.pids == "" {
		t.Skip("skip: neither limit is a cgroup v1 hierarchy here, where a launcher is born in its v2 directory by CLONE_INTO_CGROUP")
	}
	before := threadCgroups(t)
	for _, born := range []bool{true, false} {
		a, err := cg.create("born-"+strconv.FormatBool(born), limits(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // no move for a while: a cgroup.procs write waits for a grace period
		var l *launcher
		if born {
			var during []byte
			ok, err := a.inside(func() (err error) {
				during, _ = os.ReadFile("/proc/thread-self/cgroup")
				l, err = startLauncher(fakeLauncher, a.fd)
				return err
			})
			if !ok || err != nil {
				t.Fatalf("not born in the cgroups: %v", err)
			}
			h := a.mounts.in(during)
			for ctl, d := range map[string]string{"memory": a.mem, "pids": a.pids} {
				if in := h.v1Dir(ctl); d != "" && in != d {
					t.Errorf("the forking thread was in %s, not in %s", in, d)
				}
			}
		} else {
			a.mounts = nil // no way back: the launcher is moved after its start
			if l, err = a.launch(fakeLauncher); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range a.v1() {
			if pids, err := readPids(filepath.Join(d, "cgroup.procs")); err != nil || !slices.Equal(pids, []int{l.pid}) {
				t.Errorf("born %v: %s holds %v (%v), want the launcher %d alone", born, d, pids, err, l.pid)
			}
			tids, err := readPids(filepath.Join(d, "tasks"))
			if err != nil {
				t.Fatal(err)
			}
			for _, tid := range tids {
				if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); err == nil {
					t.Errorf("born %v: thread %d of this process is in %s", born, tid, d)
				}
			}
		}
		l.abandon()
		<-l.exited
		a.remove()
		if after := threadCgroups(t); !slices.Equal(after, before) {
			t.Errorf("born %v: this process's threads are in %v, were in %v", born, after, before)
		}
	}
}

// threadCgroups lists the distinct cgroup v1 memberships of this
// process's threads.
func threadCgroups(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "cgroup"))
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, ":memory:") || strings.Contains(line, ":pids:") {
				out = append(out, strings.TrimSpace(line))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The thread-group leader never enters an action's cgroups (in cgroup v1
// its memcg is charged with the whole process's memory): handed the
// work, it passes it to another thread, and stays where it was.
func TestLeaderNeverEntersAnActionsCgroups(t *testing.T) {
	cg := realCgroups(t, "pids")
	if cg.mem == "" && cg.pids == "" {
		t.Skip("skip: neither limit is a cgroup v1 hierarchy here")
	}
	a, err := cg.create("leader", limits(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer a.remove()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := unix.Gettid()
	before, _ := os.ReadFile("/proc/thread-self/cgroup")
	var forker int
	var l *launcher
	done := make(chan entered, 1)
	a.enter(func() (err error) {
		forker = unix.Gettid()
		l, err = startLauncher(fakeLauncher, a.fd)
		return err
	}, done, self) // this thread plays the leader
	r := <-done
	if !r.born || r.err != nil {
		t.Fatalf("born %v: %v", r.born, r.err)
	}
	defer func() { l.abandon(); <-l.exited }()
	if forker == self || forker == 0 {
		t.Fatalf("the launcher was forked by thread %d, the leader %d", forker, self)
	}
	if after, _ := os.ReadFile("/proc/thread-self/cgroup"); string(after) != string(before) {
		t.Errorf("the leader moved: %s, was %s", after, before)
	}
	for _, d := range a.v1() {
		if pids, err := readPids(filepath.Join(d, "cgroup.procs")); err != nil || !slices.Equal(pids, []int{l.pid}) {
			t.Errorf("%s holds %v (%v), want the launcher %d alone", d, pids, err, l.pid)
		}
	}
}

// A thread whose cgroup lies below no mount's root has no way back: the
// launch then falls back to placing the launcher, rather than sending
// the thread to the mount's root.
func TestNoWayBackFromBeyondTheMount(t *testing.T) {
	info := []byte("30 25 0:26 /docker/abc /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n")
	h := parseHost(info, []byte("8:pids:/elsewhere/xyz\n"))
	if !h.v1Outside["pids"] || h.v1Self["pids"] != "/" {
		t.Fatalf("outside %v, self %q", h.v1Outside["pids"], h.v1Self["pids"])
	}
	// This thread's own pids cgroup (from /proc/thread-self/cgroup) is
	// not below the made-up mount's root either.
	a := &actionCgroup{pids: "/sys/fs/cgroup/pids/warrant/x/a", mounts: parseMounts(info)}
	if back, err := a.wayBack(); err == nil {
		closeAll(back)
		t.Fatal("a way back to the mount's root")
	}
	if h := parseHost(info, []byte("8:pids:/docker/abc/inner\n")); h.v1Outside["pids"] || h.v1Self["pids"] != "/inner" {
		t.Fatalf("below the root: outside %v, self %q", h.v1Outside["pids"], h.v1Self["pids"])
	}
}
