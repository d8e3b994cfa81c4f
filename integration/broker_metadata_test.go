//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// pyAttempt begins the metadata tests' python scripts: attempt(name, f)
// prints "NAME ok", or "NAME ERRNO" when f raises.
const pyAttempt = `
import errno
def attempt(name, f):
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
`

// metaAttack makes, as the target, every metadata change the review
// reproduced against objects outside the writable scope, by path and by
// descriptor, and prints one line per attempt: "NAME ok" or "NAME errno".
// argv: victim (a 0600 file), binary (a 0755 file), dir, hostfile (a file
// the policy lets it read, changed only to what it already is, so that a
// success shows in its ctime alone), then the names of the broker's key
// files (the keys directory itself is not listable from the sandbox).
const metaAttack = pyAttempt + `
import os, sys, errno
victim, binary, d, hostfile = sys.argv[1:5]
keys = os.path.join(os.environ["HOME"], "..", "..", "..", "keys")  # the state dir, found from $HOME
st = os.stat(hostfile)
attempt("chmod_0666", lambda: os.chmod(victim, 0o666))
attempt("chmod_4755", lambda: os.chmod(binary, 0o4755))
attempt("chown", lambda: os.chown(victim, os.getuid(), os.getgid()))
attempt("lchown", lambda: os.lchown(victim, os.getuid(), os.getgid()))
attempt("setxattr", lambda: os.setxattr(victim, "user.warrant", b"x"))
attempt("removexattr", lambda: os.removexattr(binary, "user.keep"))
attempt("utime", lambda: os.utime(victim, (946684800, 946684800)))
attempt("utime_nofollow", lambda: os.utime(victim, (946684800, 946684800), follow_symlinks=False))
attempt("utime_dir", lambda: os.utime(d, (946684800, 946684800)))
attempt("chmod_dir", lambda: os.chmod(d, 0o777))
for k in sys.argv[5:]:
    attempt("chmod_key_" + k, lambda: os.chmod(os.path.join(keys, k), 0o644))
fd = os.open(hostfile, os.O_RDONLY)
attempt("fchmod_ro", lambda: os.fchmod(fd, st.st_mode & 0o7777))
attempt("fchown_ro", lambda: os.fchown(fd, st.st_uid, st.st_gid))
attempt("fsetxattr_ro", lambda: os.setxattr(fd, "user.warrant", b"x"))
attempt("futimens_ro", lambda: os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns)))
dfd = os.open(os.path.dirname(victim), os.O_PATH | os.O_DIRECTORY)
attempt("fchmodat_dirfd", lambda: os.chmod(os.path.basename(victim), 0o666, dir_fd=dfd))
link = os.path.join(os.getcwd(), "escape")
os.symlink(victim, link)
attempt("chmod_via_symlink", lambda: os.chmod(link, 0o666))
attempt("utime_via_symlink", lambda: os.utime(link, (946684800, 946684800)))
attempt("chmod_proc_self_fd", lambda: os.chmod("/proc/self/fd/%d" % fd, st.st_mode & 0o7777))
`

// metaAllowed makes the same kinds of changes inside the workspace, where
// they must work, and prints the same lines.
const metaAllowed = pyAttempt + `
import os, errno
open("f", "w").write("x")
os.mkdir("d")
attempt("chmod_x", lambda: os.chmod("f", 0o755))
attempt("chown_self", lambda: os.chown("f", os.getuid(), os.getgid()))
attempt("setxattr", lambda: os.setxattr("f", "user.warrant", b"v"))
attempt("utime", lambda: os.utime("f", (946684800, 978307200)))
fd = os.open("f", os.O_RDONLY)
attempt("fchmod", lambda: os.fchmod(fd, 0o750))
attempt("futimens", lambda: os.utime(fd, ns=(1000000000, 2000000000)))
attempt("chmod_dir", lambda: os.chmod("d", 0o700))
os.symlink("f", "link")
attempt("utime_link_nofollow", lambda: os.utime("link", (5, 6), follow_symlinks=False))
attempt("chmod_4755", lambda: os.chmod("d", 0o4755))
attempt("create_4755", lambda: os.close(os.open("suid", os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt("create_2755", lambda: os.close(os.open("sgid", os.O_CREAT | os.O_WRONLY, 0o2755)))
attempt("mknod_4644", lambda: os.mknod("node", 0o104644))
`

// requireAttackRefused requires that the attacker reported every one of
// its 18 attempts and one per key, none succeeded, and every object's
// metadata on the host is what it was before.
func requireAttackRefused(t *testing.T, stdout string, keys, objects []string, before map[string]metaStat) {
	t.Helper()
	got := attempts(stdout)
	if len(got) != 18+len(keys) {
		t.Fatalf("the attacker reported %d attempts (keys %v):\n%s", len(got), keys, stdout)
	}
	for name, v := range got {
		if v == "ok" {
			t.Errorf("%s succeeded outside the writable scope", name)
		}
	}
	for _, p := range objects {
		if after := statMeta(t, p); after != before[p] {
			t.Errorf("%s changed: %+v -> %+v", p, before[p], after)
		}
	}
}

// metaStat is what a metadata change could alter.
type metaStat struct {
	mode, uid, gid uint32
	mtime, ctime   unix.Timespec
	xattrs         string
}

func statMeta(t *testing.T, p string) metaStat {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		n = 0
	}
	return metaStat{mode: st.Mode, uid: st.Uid, gid: st.Gid, mtime: st.Mtim, ctime: st.Ctim, xattrs: string(buf[:n])}
}

func attempts(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, v, ok := strings.Cut(l, " "); ok {
			m[name] = v
		}
	}
	return m
}

// TestBrokerMetadataOutsideIsUnchangeable: each metadata escape the
// review reproduced — chmod 0666 of a 0600 file, chmod 4755 of a binary,
// times of a file and a directory, chmod of the broker's own keys found
// from $HOME, fchmod/fchown/fsetxattr/futimens of a file opened read-only
// under /etc, through a dirfd and through a symlink in the workspace —
// fails, and every host object's mode, owner, xattrs and times are what
// they were. The same kinds of calls inside the workspace work and are
// read back from the host.
func TestBrokerMetadataOutsideIsUnchangeable(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	out := t.TempDir()
	victim, binary, dir := filepath.Join(out, "victim"), filepath.Join(out, "binary"), filepath.Join(out, "dir")
	if err := os.WriteFile(victim, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	copyExecutable(t, "/bin/true", binary)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(binary, "user.keep", []byte("1"), 0); err != nil {
		t.Logf("note: no user xattrs on %s (%v); removexattr is still tried", out, err)
	}
	hostfile := "/etc/hostname"
	if _, err := os.Stat(hostfile); err != nil {
		hostfile = "/etc/passwd"
	}
	objects := []string{victim, binary, dir, out, hostfile}
	keys, _ := filepath.Glob(filepath.Join(d.State, "keys", "*"))
	objects = append(objects, keys...)
	before := map[string]metaStat{}
	for _, p := range objects {
		before[p] = statMeta(t, p)
	}

	args := []string{"-c", metaAttack, victim, binary, dir, hostfile}
	for _, k := range keys {
		args = append(args, filepath.Base(k))
	}
	h, r := a.Run(a.request(wire.ProfileShort, python(t), args...))
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("the attacker must run to its end: %s %+v\n%s\n%s", r.Outcome, r.Error, r.Stdout.Text, r.Stderr.Text)
	}
	if m := d.Receipt(h).Metadata; m == nil || m.Performed != 0 || m.Refused < 18 {
		t.Errorf("the attacker's receipt counts metadata calls %+v, want none performed and every attempt refused", m)
	}
	if len(keys) == 0 {
		t.Fatal("no key found to attack")
	}
	requireAttackRefused(t, r.Stdout.Text, keys, objects, before)

	h, r = a.Run(a.request(wire.ProfileShort, python(t), "-c", metaAllowed))
	got := attempts(r.Stdout.Text)
	// The setuid chmod is the one call the broker refuses (setid-bit); the
	// setuid creations are refused by the argument filter itself, before
	// the broker is asked: they are not among its counts.
	if m := d.Receipt(h).Metadata; m == nil || m.Performed < 8 || m.Refused != 1 {
		t.Errorf("the workspace run's receipt counts metadata calls %+v, want at least 8 performed and one refused", m)
	}
	for _, name := range []string{"chmod_x", "chown_self", "setxattr", "utime", "fchmod", "futimens", "chmod_dir", "utime_link_nofollow"} {
		if got[name] != "ok" {
			t.Errorf("%s inside the workspace: %q, want ok\n%s\n%s", name, got[name], r.Stdout.Text, r.Stderr.Text)
		}
	}
	for _, name := range []string{"chmod_4755", "create_4755", "create_2755", "mknod_4644"} {
		if got[name] != "EPERM" {
			t.Errorf("%s inside the workspace: %q, want EPERM", name, got[name])
		}
	}
	for _, f := range []string{"suid", "sgid", "node"} {
		if _, err := os.Lstat(filepath.Join(a.WS, f)); !os.IsNotExist(err) {
			t.Errorf("%s was created setuid or setgid: %v", f, err)
		}
	}
	f := statMeta(t, filepath.Join(a.WS, "f"))
	if f.mode&0o7777 != 0o750 || f.mtime.Sec != 2 || !strings.Contains(f.xattrs, "user.warrant") {
		t.Errorf("the workspace file reads back as mode %o, mtime %d, xattrs %q; want 0750, 2, user.warrant", f.mode&0o7777, f.mtime.Sec, f.xattrs)
	}
	if dm := statMeta(t, filepath.Join(a.WS, "d")); dm.mode&0o7777 != 0o700 {
		t.Errorf("the workspace directory reads back as mode %o, want 0700", dm.mode&0o7777)
	}
	if l := statMeta(t, filepath.Join(a.WS, "link")); l.mtime.Sec != 6 {
		t.Errorf("the symlink's own mtime is %d, want 6", l.mtime.Sec)
	}
}

// TestBrokerRealProgramsSetMetadataInTheWorkspace: the programs that set
// modes and times — chmod +x, touch, tar -xpf, cp -p, git checkout of an
// executable file — work inside the workspace, and what they set is read
// back from the host.
func TestBrokerRealProgramsSetMetadataInTheWorkspace(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	for _, tool := range []string{"sh", "tar", "cp", "git", "touch", "chmod"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skip: %s is not on this host: %v", tool, err)
		}
	}
	script := `set -e
echo 'echo hi' > run.sh
chmod +x run.sh
touch -d 2001-02-03T04:05:06Z run.sh
mkdir src && echo data > src/a && chmod 640 src/a && touch -d 2002-01-01T00:00:00Z src/a
tar -cf t.tar src && rm -r src && tar -xpf t.tar
cp -p run.sh copy.sh
git init -q repo && cd repo && git config user.email t@t && git config user.name t
echo 'echo x' > tool && chmod 755 tool && git add tool && git commit -qm one
rm tool && git checkout -q -- tool
`
	_, r := a.Run(a.request(wire.ProfileStandard, "/bin/sh", "-c", script))
	if r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("the script failed: %s %+v\n%s\n%s", r.Outcome, r.Error, r.Stdout.Text, r.Stderr.Text)
	}
	check := func(rel string, mode uint32, mtime int64) {
		t.Helper()
		m := statMeta(t, filepath.Join(a.WS, rel))
		if m.mode&0o7777 != mode || (mtime != 0 && m.mtime.Sec != mtime) {
			t.Errorf("%s: mode %o mtime %d, want %o %d", rel, m.mode&0o7777, m.mtime.Sec, mode, mtime)
		}
	}
	check("run.sh", 0o755, 981173106)
	check("copy.sh", 0o755, 981173106)
	check("src/a", 0o640, 1009843200)
	check("repo/tool", 0o755, 0)
}

// TestBrokerMetadataOutsideIsUnchangeableAsUser: the same escapes by an
// ordinary user's action (uid 65534, whose broker keeps its state under
// its home) against what that user owns — ~/.bashrc, ~/.ssh and its key,
// the broker's own keys — leave every object as it was.
func TestBrokerMetadataOutsideIsUnchangeableAsUser(t *testing.T) {
	u := asNobody(t)
	py := python(t)
	if res := u.run("/bin/true"); res.Outcome != "exited" {
		t.Fatalf("first run (creates the state): %s %+v", res.Outcome, res.Error)
	}
	ssh := filepath.Join(u.home, ".ssh")
	victim, binary := filepath.Join(ssh, "id_ed25519"), filepath.Join(u.home, ".bashrc")
	if err := os.Mkdir(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binary, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u.chownHome()
	hostfile := "/etc/hostname"
	if _, err := os.Stat(hostfile); err != nil {
		hostfile = "/etc/passwd"
	}
	keys, _ := filepath.Glob(filepath.Join(u.home, "state", "keys", "*"))
	objects := append([]string{victim, binary, ssh, u.home, hostfile}, keys...)
	before := map[string]metaStat{}
	for _, p := range objects {
		before[p] = statMeta(t, p)
	}
	args := []string{py, "-c", metaAttack, victim, binary, ssh, hostfile}
	for _, k := range keys {
		args = append(args, filepath.Base(k))
	}
	res := u.run(args...)
	if res.Outcome != "exited" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("the attacker must run to its end: %s %+v\n%s\n%s", res.Outcome, res.Error, res.Stdout.Text, res.Stderr.Text)
	}
	if len(keys) != 2 {
		t.Fatalf("keys %v, want the user's two", keys)
	}
	requireAttackRefused(t, res.Stdout.Text, keys, objects, before)
	res = u.run(py, "-c", metaAllowed)
	got := attempts(res.Stdout.Text)
	for _, name := range []string{"chmod_x", "chown_self", "setxattr", "utime", "fchmod", "futimens", "chmod_dir", "utime_link_nofollow"} {
		if got[name] != "ok" {
			t.Errorf("%s inside the workspace as uid %d: %q, want ok\n%s", name, nobody, got[name], res.Stdout.Text)
		}
	}
	if f := statMeta(t, filepath.Join(u.ws, "f")); f.mode&0o7777 != 0o750 || f.uid != nobody {
		t.Errorf("the workspace file reads back as mode %o uid %d", f.mode&0o7777, f.uid)
	}
}

// TestBrokerSnapshotChangedByOneActionNotByTheNext: a script runs from a
// sealed snapshot the broker caches, and every action's copy shares its
// inode. A script that tries to make its own copy mode 0 (through the
// descriptor it runs from, /proc/self/fd/N) is refused — the snapshot is
// not beneath the writable scope — and the next action of the same
// approved script runs. (Should a snapshot change anyway, the cache hands
// out a fresh one: snapcache's TestChangedSnapshotIsNotHandedOutAgain.)
func TestBrokerSnapshotChangedByOneActionNotByTheNext(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	script := filepath.Join(t.TempDir(), "self-chmod")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nchmod 0 \"$0\" && echo changed\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	req := a.request(wire.ProfileShort, script)
	h := a.Start(req, 2)
	if r := a.End(h); r.Outcome != wire.Exited || strings.Contains(r.Stdout.Text, "changed") || !strings.Contains(r.Stdout.Text, "ran") {
		t.Fatalf("first run (its chmod of its own snapshot must be refused): %s %+v\n%s%s", r.Outcome, r.Error, r.Stdout.Text, r.Stderr.Text)
	}
	h = a.Start(req, 2)
	if r := a.End(h); r.Outcome != wire.Exited || r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Stdout.Text, "ran") {
		t.Fatalf("the second run of the same script was broken by the first: %s %+v\n%s%s", r.Outcome, r.Error, r.Stdout.Text, r.Stderr.Text)
	}
}

// TestBrokerAbstractSocketNotSquatted: a target cannot bind an abstract
// unix socket name (from a socketpair end, the only socket it can make),
// so the name stays free for whoever owns it outside.
func TestBrokerAbstractSocketNotSquatted(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	name := "warrant-squat-" + token(t)
	// The target tries, says so in a workspace file, and holds its
	// socket until the host has tried the same name.
	squat := `
import socket, sys, time, errno, os
s, _ = socket.socketpair()
try:
    s.bind("\0" + sys.argv[1])
    r = "bound"
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e.errno))
open("tried", "w").write(r + "\n")
while not os.path.exists("host-done"):
    time.sleep(0.01)
print(r)
`
	h := a.Start(a.request(wire.ProfileShort, python(t), "-c", squat, name), 1)
	a.awaitRunning(h, filepath.Join(a.WS, "tried"), 1)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	bindErr := unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + name})
	if err := os.WriteFile(filepath.Join(a.WS, "host-done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := a.End(h)
	if strings.TrimSpace(r.Stdout.Text) != "EPERM" {
		t.Fatalf("bind from the sandbox: %q, want EPERM\n%s", r.Stdout.Text, r.Stderr.Text)
	}
	if bindErr != nil {
		t.Fatalf("while the target ran, the host could not bind the name it tried: %v", bindErr)
	}
}

// TestBrokerInodeFlagsAndOthersSchedulingRefused: a target can neither
// change the inode flags of a file outside it opened for reading
// (FS_IOC_SETFLAGS: immutable, append-only, no-atime…) nor slow or pin a
// process outside the action (setpriority, sched_setaffinity,
// sched_setscheduler on another pid); the host checks the file's flags
// and the marker process's nice value, affinity and policy afterwards.
func TestBrokerInodeFlagsAndOthersSchedulingRefused(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	marker := exec.Command("sleep", "60")
	if err := marker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { marker.Process.Kill(); marker.Wait() }()
	pid := marker.Process.Pid
	hostfile := "/etc/hostname"
	if _, err := os.Stat(hostfile); err != nil {
		hostfile = "/etc/passwd"
	}
	flags := func() int {
		f, err := os.Open(hostfile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		v, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		if err != nil {
			t.Skipf("skip: %s has no inode flags here: %v", hostfile, err)
		}
		return v
	}
	before := flags()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		t.Fatal(err)
	}
	script := pyAttempt + `
import os, sys, errno, fcntl, struct
pid, hostfile = int(sys.argv[1]), sys.argv[2]
fd = os.open(hostfile, os.O_RDONLY)
attempt("setflags", lambda: fcntl.ioctl(fd, 0x40086602, struct.pack("i", 0x80)))
attempt("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
attempt("setaffinity", lambda: os.sched_setaffinity(pid, {0}))
attempt("setscheduler", lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)))
attempt("own_priority", lambda: os.setpriority(os.PRIO_PROCESS, 0, 5))
`
	_, r := a.Run(a.request(wire.ProfileShort, python(t), "-c", script, strconv.Itoa(pid), hostfile))
	got := attempts(r.Stdout.Text)
	for _, name := range []string{"setflags", "setpriority", "setaffinity", "setscheduler"} {
		if got[name] != "EPERM" {
			t.Errorf("%s: %q, want EPERM\n%s", name, got[name], r.Stderr.Text)
		}
	}
	if got["own_priority"] != "ok" {
		t.Errorf("the target could not lower its own priority: %q", got["own_priority"])
	}
	if after := flags(); after != before {
		t.Errorf("%s's inode flags changed: %#x -> %#x", hostfile, before, after)
	}
	if nice, err := unix.Getpriority(unix.PRIO_PROCESS, pid); err != nil || nice != 20 { // the raw value: 20 - nice
		t.Errorf("the marker's priority is %d (%v), want its nice 0 (raw 20)", nice, err)
	}
	var now unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &now); err != nil || now != set {
		t.Errorf("the marker's affinity changed: %v (%v)", now, err)
	}
}
