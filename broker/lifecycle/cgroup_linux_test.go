package lifecycle

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// realCgroups detects this host's cgroups for one test, skipping (with
// the reason) when the limit want needs is not enforced here.
func realCgroups(t *testing.T, want string) *Cgroups {
	t.Helper()
	cg, err := DetectCgroups(fmt.Sprintf("lifecycle-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-")))
	if err != nil {
		t.Skipf("skip: no cgroup hierarchy is writable here: %v", err)
	}
	t.Cleanup(cg.Remove)
	e := cg.Enforcement()
	if (want == "memory" && e.Memory == Unenforced) || (want == "pids" && e.Pids == Unenforced) {
		t.Skipf("skip: the %s limit is not enforced on this host: %s", want, e.Missing)
	}
	return cg
}

// TestPidsLimitBindsAForkBomb: a shell that forks sleeps without end
// never holds more than pids.max tasks; the refused forks are counted,
// and the whole group is ended and confirmed gone when the root exits.
func TestPidsLimitBindsAForkBomb(t *testing.T) {
	cg := realCgroups(t, "pids")
	lim := limits(time.Minute)
	lim.Pids = 32
	r := launchIn(t, cg, `i=0; while [ $i -lt 200 ]; do sleep 1000 & i=$((i+1)); done 2>/dev/null; echo tried`, lim, nil, "sh")
	u := r.res.Usage
	if !r.res.GroupGone || u == nil || u.PidsLimitHits == 0 || u.PidsPeak > 32 {
		t.Fatalf("gone %v usage %+v: %s (%v)", r.res.GroupGone, u, r.res.Evidence, r.res.Err)
	}
	t.Logf("pids.max 32: peak %d, %d forks refused (%s)", u.PidsPeak, u.PidsLimitHits, r.res.Enforced.Pids)
}

// TestMemoryLimitEndsTheAction: a target that touches more memory than
// its limit is killed by the kernel, and the outcome says so: signaled,
// MEMORY_LIMIT, the oom_kill counter risen.
func TestMemoryLimitEndsTheAction(t *testing.T) {
	cg := realCgroups(t, "memory")
	lim := limits(time.Minute)
	lim.Memory = 32 << 20
	// dd holds one block of bs bytes in memory: 128 MiB of it.
	r := launchIn(t, cg, `exec dd if=/dev/zero of=/dev/null bs=128M count=1`, lim, nil, "sh")
	u := r.res.Usage
	if r.res.Outcome != wire.Signaled || r.res.Signal != int(unix.SIGKILL) || r.res.Err == nil || r.res.Err.Code != wire.CodeMemoryLimit ||
		u == nil || u.OOMKills == 0 || !r.res.GroupGone {
		t.Fatalf("outcome %s signal %d err %v usage %+v gone %v; stderr %q", r.res.Outcome, r.res.Signal, r.res.Err, u, r.res.GroupGone, r.stderr)
	}
	if !strings.Contains(r.res.Err.Message, "ended by the memory limit (32 MiB)") {
		t.Fatalf("the sentence does not say the memory limit ended it: %q", r.res.Err.Message)
	}
}

// TestCgroupV1AloneEndsTheGroup: with the cgroup v1 hierarchies alone (no
// cgroup.kill), the end is made by SIGKILL to each member listed there
// and confirmed by an empty cgroup.procs.
func TestCgroupV1AloneEndsTheGroup(t *testing.T) {
	cg := realCgroups(t, "pids")
	if cg.pids == "" {
		t.Skip("skip: the pids controller is not a cgroup v1 hierarchy here")
	}
	v1 := *cg
	v1.dir = ""
	r := launchIn(t, &v1, `sleep 1000 & echo $!`, limits(time.Minute), nil, "sh")
	if r.res.Outcome != wire.Exited || !r.res.GroupGone || !r.res.ByCgroup || !strings.Contains(r.res.Evidence, "cgroup.procs lists no process") {
		t.Fatalf("outcome %s gone %v by cgroup %v: %s (%v)", r.res.Outcome, r.res.GroupGone, r.res.ByCgroup, r.res.Evidence, r.res.Err)
	}
	if alive(t, r.stdout.String()) {
		t.Fatal("the grandchild outlived the action")
	}
}

// TestLeftoversAreEndedByMembership: processes left in an action's
// cgroups by a broker that died are found there, named with their
// command lines, ended, and the cgroups removed; with cgroup.kill and
// with cgroup v1 alone.
func TestLeftoversAreEndedByMembership(t *testing.T) {
	for _, v1only := range []bool{false, true} {
		t.Run(fmt.Sprintf("v1-only=%v", v1only), func(t *testing.T) {
			cg := realCgroups(t, "pids")
			if v1only {
				if cg.pids == "" {
					t.Skip("skip: the pids controller is not a cgroup v1 hierarchy here")
				}
				c := *cg
				c.dir, cg = "", &c
			}
			a, err := cg.create("left", limits(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sleep", "1000")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			pid := cmd.Process.Pid
			execed(t, pid)
			if a.dir != "" {
				if err := writeKnob(a.dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.place(pid); err != nil {
				t.Fatal(err)
			}
			a.remove() // only closes: it is populated
			left, err := cg.EndLeftovers()
			if err != nil || len(left) != 1 || left[0].ID != "left" || !left[0].Ended || len(left[0].Pids) != 1 || left[0].Pids[0] != pid ||
				!strings.HasPrefix(left[0].Commands[0], "sleep 1000") {
				t.Fatalf("leftovers %+v, %v", left, err)
			}
			<-done
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != unix.SIGKILL {
				t.Fatalf("the survivor ended with %v, not SIGKILL", cmd.ProcessState)
			}
			for _, d := range []string{a.dir, a.mem, a.pids} {
				if d != "" && exists(d) {
					t.Errorf("cgroup %s is still there", d)
				}
			}
			t.Logf("ended by %s", left[0].How)
		})
	}
}

// fakeCgroupfs lays out a temporary directory like cgroupfs for a
// delegated cgroup v2 subtree: this process's cgroup /user/broker.scope
// with the given controllers available, and the files the kernel would
// make in this broker's directory. It is NOT cgroupfs: writes just store
// bytes and nothing is enforced. It returns the host as parsed and the
// mount point.
func fakeCgroupfs(t *testing.T, controllers, scope string) (*cgroupHost, string) {
	t.Helper()
	mnt := t.TempDir()
	base := filepath.Join(mnt, "user", "broker.scope")
	broker := filepath.Join(base, "warrant", scope)
	if err := os.MkdirAll(broker, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{
		filepath.Join(base, "cgroup.controllers"): controllers, filepath.Join(base, "cgroup.subtree_control"): "",
		filepath.Join(base, "cgroup.procs"): "1\n", filepath.Join(broker, "cgroup.kill"): "",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	info := fmt.Sprintf("30 25 0:26 / %s rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n", mnt)
	return parseHost([]byte(info), []byte("0::/user/broker.scope\n")), mnt
}

// TestV2ControllersOnAFakeCgroupfs: where the memory and pids controllers
// are delegated to the broker's cgroup v2 subtree, the broker enables
// them for its children and sets each action's memory.max and pids.max
// before it runs, and reads the OOM and fork counters back. This runs on
// a temporary directory laid out like cgroupfs (this host's cgroup v2
// has neither controller), so it shows what is written and read, not
// that the kernel enforces it: that is the v1 tests' and the probe's job.
func TestV2ControllersOnAFakeCgroupfs(t *testing.T) {
	h, mnt := fakeCgroupfs(t, "cpuset cpu io memory pids", "s1")
	if h.v2Mount != mnt || h.v2Self != "/user/broker.scope" {
		t.Fatalf("parsed %+v", h)
	}
	cg, err := h.detect("s1")
	if err != nil {
		t.Fatal(err)
	}
	e := cg.Enforcement()
	if e.Memory != CgroupV2 || e.Pids != CgroupV2 || e.Missing != "" {
		t.Fatalf("enforcement %+v", e)
	}
	base := filepath.Join(mnt, "user", "broker.scope")
	for _, d := range []string{base, filepath.Join(base, "warrant"), filepath.Join(base, "warrant", "s1")} {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
		if err != nil || string(b) != "+pids" { // the last of the two writes; each is a separate write(2) on cgroupfs
			t.Errorf("%s/cgroup.subtree_control: %q %v", d, b, err)
		}
	}
	lim := limits(time.Minute)
	a, err := cg.create("act", lim)
	if err != nil {
		t.Fatal(err)
	}
	defer a.remove()
	for knob, want := range map[string]string{"memory.max": "2147483648", "pids.max": "256"} {
		if b, err := os.ReadFile(filepath.Join(a.dir, knob)); err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %s", knob, b, err, want)
		}
	}
	os.WriteFile(filepath.Join(a.dir, "memory.events"), []byte("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n"), 0o644)
	os.WriteFile(filepath.Join(a.dir, "pids.events"), []byte("max 3\n"), 0o644)
	os.WriteFile(filepath.Join(a.dir, "pids.peak"), []byte("256\n"), 0o644)
	r := Result{Outcome: wire.Signaled, Signal: int(unix.SIGKILL), Usage: a.usage()}
	memoryEnding(&r, lim.Memory)
	if r.Usage.OOMKills != 1 || r.Usage.PidsLimitHits != 3 || r.Usage.PidsPeak != 256 || r.Err == nil || r.Err.Code != wire.CodeMemoryLimit {
		t.Fatalf("usage %+v, err %v", r.Usage, r.Err)
	}
}

// TestMoveSelfToLeafOnAFakeCgroupfs: a cgroup v2 directory that holds
// processes cannot give controllers to children (EBUSY on cgroupfs), so
// when the broker is its only process it moves itself into the leaf
// warrant-broker; with another process there it refuses and says why.
// This runs on a temporary directory laid out like cgroupfs (this host's
// cgroup v2 has no domain controller to return EBUSY for): it shows what
// is read and written, not the kernel's rule.
func TestMoveSelfToLeafOnAFakeCgroupfs(t *testing.T) {
	_, mnt := fakeCgroupfs(t, "memory pids", "s3")
	base := filepath.Join(mnt, "user", "broker.scope")
	self := strconv.Itoa(os.Getpid())
	os.WriteFile(filepath.Join(base, "cgroup.procs"), []byte(self+"\n1\n"), 0o644)
	if err := moveSelfToLeaf(base); err == nil || !strings.Contains(err.Error(), "holds 1 other process(es)") {
		t.Fatalf("moved out of a cgroup it shares: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "warrant-broker")); !os.IsNotExist(err) {
		t.Fatalf("a leaf was made for a refused move: %v", err)
	}
	os.WriteFile(filepath.Join(base, "cgroup.procs"), []byte(self+"\n"), 0o644)
	if err := moveSelfToLeaf(base); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(base, "warrant-broker", "cgroup.procs")); err != nil || string(b) != self {
		t.Fatalf("warrant-broker/cgroup.procs = %q %v, want this process %s", b, err, self)
	}
}

// TestNoControllersIsSaid: a cgroup v2 subtree with neither controller
// and no cgroup v1 hierarchy (a temporary directory laid out like
// cgroupfs) still ends actions by cgroup.kill, but enforces no limit,
// and says which are missing and how to get them.
func TestNoControllersIsSaid(t *testing.T) {
	h, _ := fakeCgroupfs(t, "cpu io", "s2")
	cg, err := h.detect("s2")
	if err != nil {
		t.Fatal(err)
	}
	e := cg.Enforcement()
	if e.Memory != Unenforced || e.Pids != Unenforced || cg.Dir() == "" {
		t.Fatalf("enforcement %+v, dir %q", e, cg.Dir())
	}
	for _, want := range []string{"memory is not limited", "pids is not limited", "no memory controller delegated", Delegate} {
		if !strings.Contains(e.Missing, want) {
			t.Errorf("missing %q: %s", want, e.Missing)
		}
	}
	card := e.Sentence(wire.ProfileShort, 2<<30, 256)
	if !strings.HasPrefix(card, "Memory and the number of processes are NOT limited on this host.") || !strings.Contains(card, Delegate) {
		t.Fatalf("card: %s", card)
	}
}

// TestParseHostOfAHybridContainer: cgroup v1 mounts of a container's own
// subtree (mount root not "/") give this process's path below them.
func TestParseHostOfAHybridContainer(t *testing.T) {
	info := `35 30 0:30 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory
36 30 0:31 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
37 30 0:32 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
38 30 0:33 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
`
	self := "12:pids:/docker/abc\n5:memory:/docker/abc/sub\n3:cpu,cpuacct:/docker/abc\n0::/\n"
	h := parseHost([]byte(info), []byte(self))
	if h.v1Mount["memory"] != "/sys/fs/cgroup/memory" || h.v1Self["memory"] != "/sub" ||
		h.v1Mount["pids"] != "/sys/fs/cgroup/pids" || h.v1Self["pids"] != "/docker/abc" ||
		h.v2Mount != "/sys/fs/cgroup/unified" || h.v2Self != "/" {
		t.Fatalf("parsed %+v", h)
	}
}

// A spare set of cgroup v1 directories is made in the background after
// an action of some limits, and the next action of those limits takes it
// by rename (the same directories, its limits already set); ended
// actions' directories are removed in the background; Remove waits for
// that and removes the spares; and a spare a dead broker left is removed
// by the next one, not reported as a survivor.
func TestSparesAreTakenAndRemoved(t *testing.T) {
	scope := fmt.Sprintf("lifecycle-spares-%d", os.Getpid())
	cg, err := DetectCgroups(scope)
	if err != nil || cg.mem == "" {
		t.Skipf("skip: no cgroup v1 memory hierarchy is writable here (%v), so there are no spares", err)
	}
	defer cg.Remove()
	lim := limits(time.Minute)
	inode := func(p string) uint64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	first, err := cg.create("sp-a", lim)
	if err != nil {
		t.Fatal(err)
	}
	cg.ahead(lim).Wait() // the refill
	spare, _ := filepath.Glob(filepath.Join(cg.mem, "spare-*"))
	if len(spare) != 1 {
		t.Fatalf("spares after the first action: %v", spare)
	}
	made := inode(spare[0])
	second, err := cg.create("sp-b", lim)
	if err != nil {
		t.Fatal(err)
	}
	if second.mem != filepath.Join(cg.mem, "sp-b") || inode(second.mem) != made {
		t.Fatalf("the second action's memory cgroup %s is not the spare %s", second.mem, spare[0])
	}
	if b, _ := os.ReadFile(filepath.Join(second.mem, "memory.limit_in_bytes")); strings.TrimSpace(string(b)) != strconv.FormatUint(lim.Memory, 10) {
		t.Fatalf("the spare's memory limit is %q", b)
	}
	if second.pids != "" {
		if b, _ := os.ReadFile(filepath.Join(second.pids, "pids.max")); strings.TrimSpace(string(b)) != strconv.FormatUint(lim.Pids, 10) {
			t.Fatalf("the spare's pids.max is %q", b)
		}
	}
	cg.release(first)
	cg.release(second)
	cg.sp.bg.Wait()
	for _, d := range []string{first.mem, second.mem, first.dir, second.dir} {
		if _, err := os.Stat(d); d != "" && !os.IsNotExist(err) {
			t.Errorf("%s is still there after its action: %v", d, err)
		}
	}
	// A broker that dies leaves its spare; the next one removes it. The
	// second action's take started the next spare's refill.
	cg.ahead(lim).Wait()
	left, _ := filepath.Glob(filepath.Join(cg.mem, "spare-*"))
	if len(left) != 1 {
		t.Fatalf("spares before the restart: %v", left)
	}
	next, err := DetectCgroups(scope)
	if err != nil {
		t.Fatal(err)
	}
	found, err := next.EndLeftovers()
	if err != nil || len(found) != 0 {
		t.Fatalf("a spare was reported as a survivor: %+v %v", found, err)
	}
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Fatalf("the dead broker's spare %s is still there: %v", left[0], err)
	}
	cg.Remove()
	if spares, _ := filepath.Glob(filepath.Join(cg.mem, "spare-*")); len(spares) != 0 {
		t.Fatalf("spares left after Remove: %v", spares)
	}
}

// TestWarmOnlyWhereItPays: a warm launcher is refused where the cold one
// is started in all its cgroups by CLONE_INTO_CGROUP (cgroup v2 alone),
// and allowed with cgroup v1 directories (the cold launcher is moved
// too) or without cgroups.
func TestWarmOnlyWhereItPays(t *testing.T) {
	for _, c := range []struct {
		cg   *Cgroups
		pays bool
	}{
		{nil, true},
		{&Cgroups{dir: "/v2"}, false},
		{&Cgroups{dir: "/v2", mem: "/v1/memory"}, true},
		{&Cgroups{dir: "/v2", pids: "/v1/pids"}, true},
		{&Cgroups{mem: "/v1/memory", pids: "/v1/pids"}, true},
	} {
		if err := warmCosts(c.cg); (err == nil) != c.pays {
			t.Errorf("cgroups %+v: warmCosts = %v, want pays %v", c.cg, err, c.pays)
		}
	}
}

// execed waits until pid's command line is readable: Start returns once
// the vfork child has its new memory, a moment before the kernel writes
// the arguments there.
func execed(t *testing.T, pid int) {
	t.Helper()
	for range 1000 {
		if command(pid) != "" {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("process %d has no command line after a second", pid)
}
