package probeprog

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main runs the part of the battery that args (Plan.Args) assign to this
// process and returns its exit status. Every attempt prints its line; the
// status is 0 unless the plan cannot be read.
func Main(args []string) int {
	p, err := ParsePlan(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	switch p.Who {
	case Target:
		b, err := os.ReadFile(InputFile)
		say(p.Who, ReadInput, err, strings.TrimSpace(string(b)))
		say(p.Who, WriteWorkspace, os.WriteFile(OutFile(p.Who), []byte(OutContent(p.Who)), 0o600), OutFile(p.Who))
		say(p.Who, RunRuntime, exec.Command(p.Runtime, RuntimeArgs...).Run(), p.Runtime)
		metadataWorkspace(p)
		attack(p)
		spawn(p, Child, SpawnChild)
	case Child:
		inherited(p, SpawnChild)
		spawn(p, Grandchild, SpawnGrandchild)
	case Grandchild:
		inherited(p, SpawnGrandchild)
		attack(p)
	case PidsProber:
		forkPast()
	case MemoryProber:
		allocPast()
	case EgressProber:
		egressProbe()
	}
	return 0
}

// inherited writes who's workspace file and reports the seccomp mode and
// no_new_privs bit it runs under (prctl: /proc/self is not in the policy).
func inherited(p *Plan, check string) {
	err := os.WriteFile(OutFile(p.Who), []byte(OutContent(p.Who)), 0o600)
	var mode, nnp int
	if err == nil {
		mode, err = unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	}
	if err == nil {
		nnp, err = unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	}
	say(p.Who, check, err, fmt.Sprintf("seccomp=%d nonewprivs=%d", mode, nnp))
}

// spawn runs this program again as who, with the same stdout and stderr.
func spawn(p *Plan, who, check string) {
	prefix := os.Args[:slices.Index(os.Args, Arg)+1]
	next := *p
	next.Who = who
	cmd := exec.Command(prefix[0], append(slices.Clone(prefix[1:]), next.Args()...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	say(p.Who, check, cmd.Run(), who+" exited 0")
}

// attack makes every forbidden attempt once.
func attack(p *Plan) {
	who := p.Who
	say(who, WriteOutside, os.WriteFile(filepath.Join(p.Outside, EscapeFile(who)), []byte(who), 0o600), "created")
	b, err := os.ReadFile(filepath.Join(p.Outside, SecretFile))
	say(who, ReadSecret, err, string(b))
	b, rerr := os.ReadFile(filepath.Join(EscapeLink, SecretFile))
	werr := os.WriteFile(filepath.Join(EscapeLink, LinkFile(who)), []byte(who), 0o600)
	switch {
	case rerr == nil:
		say(who, SymlinkEscape, nil, "read "+string(b))
	case werr == nil:
		say(who, SymlinkEscape, nil, "wrote through the link")
	default:
		say(who, SymlinkEscape, fmt.Errorf("read: %s; write: %s", errText(rerr), errText(werr)), "")
	}
	loop := [4]byte{127, 0, 0, 1}
	say(who, TCPConnect, dial(unix.AF_INET, unix.SOCK_STREAM, &unix.SockaddrInet4{Port: p.TCPPort, Addr: loop}), "connected")
	say(who, UDPSend, sendUDP(p.UDPPort), "sent")
	say(who, UnixPathname, dial(unix.AF_UNIX, unix.SOCK_STREAM, &unix.SockaddrUnix{Name: SocketFile}), "connected")
	say(who, UnixAbstract, dial(unix.AF_UNIX, unix.SOCK_STREAM, &unix.SockaddrUnix{Name: "@" + p.Abstract}), "connected")
	say(who, Signal, unix.Kill(p.MarkerPID, unix.SIGTERM), "SIGTERM delivered")
	say(who, ProtectedWrite, os.WriteFile(ProtectedFile, []byte(who), 0o755), "wrote")
	leak(p)
	var found []string
	for _, name := range p.Canaries {
		if v, ok := os.LookupEnv(name); ok {
			found = append(found, name+"="+v)
		}
	}
	if len(found) > 0 {
		say(who, EnvCanary, nil, strings.Join(found, " "))
	} else {
		say(who, EnvCanary, errors.New("absent"), "")
	}
	err = unix.Unshare(unix.CLONE_NEWUSER)
	ns, _ := os.Readlink("/proc/self/ns/user")
	if err != nil {
		err = fmt.Errorf("%s; ns=%s", errText(err), ns)
	}
	say(who, UserNS, err, "ns="+ns)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = unix.PtraceAttach(p.MarkerPID)
	if err == nil {
		unix.PtraceDetach(p.MarkerPID)
	}
	say(who, Ptrace, err, "attached")
	metadataOutside(p)
}

// metadataWorkspace sets the mode, an xattr and the times of who's
// workspace file: the broker performs them beneath the writable scope.
func metadataWorkspace(p *Plan) {
	f := OutFile(p.Who)
	err := unix.Chmod(f, MetaMode)
	if err == nil {
		err = unix.Setxattr(f, MetaXattr, []byte(p.Who), 0)
		if err == unix.EOPNOTSUPP { // the filesystem has no user xattrs; the host knows whether it does
			err = nil
		}
	}
	if err == nil {
		err = unix.UtimesNano(f, []unix.Timespec{{Sec: MetaMtime}, {Sec: MetaMtime}})
	}
	say(p.Who, MetadataWorkspace, err, f)
}

// metadataOutside tries every metadata change of a file outside the
// writable scope, by path and through an O_PATH descriptor (which
// Landlock does not check). Done means any one of them worked.
func metadataOutside(p *Plan) {
	victim := filepath.Join(p.Outside, MetaFile)
	ts := []unix.Timespec{{Sec: 1}, {Sec: 1}}
	var done, failed []string
	try := func(name string, err error) {
		if err == nil {
			done = append(done, name)
		} else {
			failed = append(failed, name+" "+errText(err))
		}
	}
	try("chmod", unix.Chmod(victim, 0o666))
	try("chown", unix.Chown(victim, os.Getuid(), os.Getgid()))
	try("setxattr", unix.Setxattr(victim, MetaXattr, []byte(p.Who), 0))
	try("utimensat", unix.UtimesNano(victim, ts))
	fd, err := unix.Open(victim, unix.O_PATH|unix.O_CLOEXEC, 0)
	try("open_path", err)
	if err == nil {
		try("fchownat", unix.Fchownat(fd, "", os.Getuid(), os.Getgid(), unix.AT_EMPTY_PATH))
		try("fchmodat2", unix.Fchmodat(fd, "", 0o666, unix.AT_EMPTY_PATH))
		try("futimens", unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH))
		unix.Close(fd)
	}
	if len(done) > 1 || (len(done) == 1 && done[0] != "open_path") {
		say(p.Who, MetadataOutside, nil, "changed by "+strings.Join(done, ","))
		return
	}
	say(p.Who, MetadataOutside, errors.New(strings.Join(failed, "; ")), "")
}

// leak uses the descriptor the broker left open, if it is still the
// broker's file here.
func leak(p *Plan) {
	var st unix.Stat_t
	if err := unix.Fstat(p.LeakFD, &st); err != nil {
		say(p.Who, LeakedFD, err, "")
		return
	}
	if fmt.Sprintf("%d:%d", st.Dev, st.Ino) != p.LeakID {
		say(p.Who, LeakedFD, fmt.Errorf("fd %d is another file", p.LeakFD), "")
		return
	}
	_, err := unix.Write(p.LeakFD, []byte(p.Who))
	say(p.Who, LeakedFD, err, "wrote to the broker's file")
}

func dial(family, typ int, sa unix.Sockaddr) error {
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, sa); err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte("x"))
	return err
}

func sendUDP(port int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Sendto(fd, []byte("x"), 0, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
}

// say prints one attempt: "WHO CHECK done DETAIL" or "WHO CHECK failed WHY".
func say(who, check string, err error, detail string) {
	if err == nil {
		fmt.Printf("%s %s done %s\n", who, check, oneLine(detail))
		return
	}
	fmt.Printf("%s %s failed %s\n", who, check, oneLine(errText(err)))
}

// errText names an errno symbolically ("errno EACCES").
func errText(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return "errno " + unix.ErrnoName(en)
	}
	return err.Error()
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ") }
