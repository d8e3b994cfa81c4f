package main

import (
	"fmt"
	"slices"
	"strings"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"warrant/internal/personality"
)

// allowed is the allowlist, in the spirit of Docker's default profile:
// what ordinary programs and language runtimes need, and nothing that
// reaches other processes, the network, namespaces or the kernel's
// configuration. Names this libseccomp does not know are skipped (they
// stay denied). SysV IPC is left out: it is external IPC here. The
// metadata calls, inotify_add_watch and connect are not here: they are
// notified. sendto, sendmsg and sendmmsg are, and the argument program
// refuses them with MSG_FASTOPEN, which connects without connect.
// socketpair is here, and the argument program keeps it to AF_UNIX
// stream and seqpacket pairs (socketPairTypes). seccomp is allowed only
// without a listener (compilePolicy).
const allowed = `accept accept4 access alarm arch_prctl brk cachestat capget capset chdir clock_getres
clock_gettime clock_nanosleep close close_range copy_file_range creat dup dup2
dup3 epoll_create epoll_create1 epoll_ctl epoll_pwait epoll_pwait2 epoll_wait eventfd
eventfd2 execve execveat exit exit_group faccessat faccessat2 fadvise64 fallocate fchdir
fcntl fdatasync fgetxattr flistxattr flock fork fstat fstatfs fsync ftruncate futex
futex_requeue futex_wait futex_waitv futex_wake getcpu getcwd getdents getdents64
getegid geteuid getgid getgroups getitimer get_mempolicy getpeername getpgid getpgrp
getpid getppid getpriority getrandom getresgid getresuid getrlimit get_robust_list
getrusage getsid getsockname getsockopt get_thread_area gettid gettimeofday getuid
getxattr inotify_init inotify_init1 inotify_rm_watch io_cancel
io_destroy io_getevents io_pgetevents ioprio_get ioprio_set io_setup io_submit kill
landlock_add_rule landlock_create_ruleset landlock_restrict_self lgetxattr link linkat
listxattr llistxattr lseek lstat madvise map_shadow_stack mbind membarrier
memfd_create mincore mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mprotect
mremap msync munlock munlockall munmap nanosleep newfstatat open openat pause pidfd_open
pidfd_send_signal pipe pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll prctl pread64
preadv preadv2 pselect6 pwrite64 pwritev pwritev2 read readahead readlink readlinkat
readv recvfrom recvmmsg recvmsg remap_file_pages rename renameat renameat2
restart_syscall rmdir rseq rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo
rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_tgsigqueueinfo sched_getaffinity
sched_getattr sched_getparam sched_get_priority_max sched_get_priority_min
sched_getscheduler sched_rr_get_interval sched_setaffinity sched_setattr sched_setparam
sched_setscheduler sched_yield select sendfile sendmmsg sendmsg sendto
set_mempolicy setfsgid setfsuid setgid setgroups setitimer setpriority setregid
setresgid setresuid setreuid setrlimit set_robust_list setsockopt set_thread_area
set_tid_address setuid shutdown sigaltstack signalfd signalfd4 socketpair splice stat statfs statx
symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time timer_create
timer_delete timer_getoverrun timer_gettime timer_settime timerfd_create timerfd_gettime
timerfd_settime times tkill truncate umask uname unlink unlinkat vfork wait4 waitid
write writev`

// denied are refused by name, so that a target (and a test) can tell a
// deliberate denial from an unknown system call (ENOSYS): the filter
// notifies each one, and the broker answers EPERM without doing anything
// and counts it by call (and a socket's by family), so that a run can say
// what its sandbox refused (broker/internal/metadata, "filter-count").
// Without the broker's listener the kernel answers ENOSYS: still refused
// (no other listener can exist: seccomp with one is EPERM). clone3 is
// deliberately absent from both lists: ENOSYS makes libc fall back to
// clone, whose flags the filter can inspect (and which libc tries at
// every thread and process it starts, so it is not counted). The broker
// lets socket through only for an egress lease's TCP socket. bind and
// listen are denied: a socketpair(AF_UNIX) end needs no name (binding one
// to an abstract name would squat it), the broker binds a lease's TCP
// socket itself when it connects it, and a target serves nothing (listen
// binds an unbound TCP socket to a port of every address, which
// Landlock's bind rule does not see). fanotify would watch what lies
// outside the readable scope.
const denied = `socket ptrace process_vm_readv process_vm_writev io_uring_setup
io_uring_enter io_uring_register bpf perf_event_open userfaultfd keyctl add_key
request_key mount umount2 pivot_root move_mount open_tree fsopen fsconfig fsmount fspick
mount_setattr unshare setns kexec_load kexec_file_load init_module finit_module
delete_module open_by_handle_at name_to_handle_at chroot setsid setpgid pidfd_getfd
acct swapon swapoff reboot quotactl syslog vhangup iopl ioperm settimeofday
clock_settime clock_adjtime adjtimex lookup_dcookie bind listen fanotify_init fanotify_mark`

// notified are the calls that change a file's metadata (mode, owner,
// extended attributes, times), which Landlock does not govern, and
// inotify_add_watch, which Landlock does not govern either: a watch is
// added only beneath the writable scope. The kernel
// stops the caller and asks the broker over the filter's listener; the
// broker emulates the call on a descriptor it resolved beneath the
// writable scope, or answers EPERM (broker/internal/metadata), a chmod
// with a setuid or setgid bit included. The broker never lets the kernel
// continue such a call itself, and no one else can hold a listener.
// Without the broker's the kernel answers ENOSYS, so a launcher that did
// not hand it over, or a broker that is gone, fails closed. Calls
// added to this family by newer kernels (setxattrat, removexattrat) are
// in neither list: ENOSYS.
const notified = `chmod fchmod fchmodat fchmodat2 chown fchown fchownat lchown setxattr
lsetxattr fsetxattr removexattr lremovexattr fremovexattr utime utimes futimesat utimensat
inotify_add_watch`

// network is notified as well, always, and answered by the broker: EACCES
// without an egress lease; with one, it connects its own duplicate of the
// target's socket to the proxy whose address it holds, never to the
// caller's, or refuses (broker/internal/metadata). It never lets the
// kernel continue a connect. Without the broker: ENOSYS.
const network = `connect`

// deniedIoctls are compared on the command's low 32 bits: terminal
// injection, and the inode attributes (flags such as immutable, project
// and xattr flags, the inode version, fs-verity, encryption policies)
// that Landlock's ioctl right does not cover for regular files, which a
// target could otherwise change on any file it can open for reading.
var deniedIoctls = []uint64{unix.TIOCSTI, unix.TIOCLINUX, unix.FS_IOC_SETFLAGS, unix.FS_IOC_ENABLE_VERITY,
	unix.FS_IOC_SET_ENCRYPTION_POLICY,
	0x40046602, // FS_IOC32_SETFLAGS
	0x401c5820, // FS_IOC_FSSETXATTR
	0x40087602, // FS_IOC_SETVERSION
	0x40047602, // FS_IOC32_SETVERSION
}

// fastOpenFlags is the flags argument of each call that sends, where
// MSG_FASTOPEN would connect a TCP socket as it sends, without connect.
var fastOpenFlags = []struct {
	name string
	arg  uint
}{{"sendto", 3}, {"sendmsg", 2}, {"sendmmsg", 3}}

// deniedFcntls are compared on the command's low 32 bits: a file lease
// (F_SETLEASE) on a file the target's uid owns makes every other
// process's open of it wait for the target, and a directory notification
// (F_NOTIFY) watches a directory it may only read.
var deniedFcntls = []uint64{unix.F_SETLEASE, unix.F_NOTIFY}

// socketPairTypes are the socket types a socketpair may have (compared
// masked with SOCK_TYPE_MASK, so SOCK_CLOEXEC and SOCK_NONBLOCK pass):
// an end of a connected stream or seqpacket pair reaches only its peer,
// whereas a datagram end (AF_UNIX turns SOCK_RAW into one) may send to
// any pathname socket, which Landlock mediates only from ABI 9.
var socketPairTypes = []uint64{unix.SOCK_STREAM, unix.SOCK_SEQPACKET}

const sockTypeMask = 0xf // SOCK_TYPE_MASK, linux/net.h

// selfOnly refuses the scheduling calls that name another process.
var selfOnly = []struct {
	name  string
	conds []seccomp.ScmpCondition
}{
	{"setpriority", []seccomp.ScmpCondition{cond(0, seccomp.CompareNotEqual, unix.PRIO_PROCESS), cond(1, seccomp.CompareNotEqual, 0)}},
	{"ioprio_set", []seccomp.ScmpCondition{cond(0, seccomp.CompareNotEqual, 1 /* IOPRIO_WHO_PROCESS */), cond(1, seccomp.CompareNotEqual, 0)}},
	{"sched_setaffinity", []seccomp.ScmpCondition{cond(0, seccomp.CompareNotEqual, 0)}},
	{"sched_setscheduler", []seccomp.ScmpCondition{cond(0, seccomp.CompareNotEqual, 0)}},
	{"sched_setparam", []seccomp.ScmpCondition{cond(0, seccomp.CompareNotEqual, 0)}},
	{"sched_setattr", []seccomp.ScmpCondition{cond(0, seccomp.CompareNotEqual, 0)}},
}

// createMode is, for each call that creates a file with a mode, the
// argument of its flags (-1: it always creates) and of its mode: a file is
// never created setuid or setgid either. openat2 is left out of the
// allowlist (ENOSYS, and libc falls back to openat), since its mode lies
// in a structure the filter cannot read.
var createMode = []struct {
	name        string
	flags, mode int
}{{"open", 1, 2}, {"openat", 2, 3}, {"creat", -1, 1}, {"mknod", -1, 1}, {"mknodat", -1, 2}}

// namespaceFlags are the clone flags that would create a namespace.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

var (
	actDeny   = seccomp.ActErrno.SetReturnCode(int16(unix.EPERM)) // the argument program's refusals
	actAbsent = seccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))
)

// compilePolicy returns the two BPF programs of the policy for the native
// architecture, in load order, and libseccomp's pseudo-code of each. The
// kernel runs both and the strictest verdict wins (EPERM over a
// notification over allow), which expresses "allow ioctl unless its
// command's low 32 bits are TIOCSTI or TIOCLINUX" and "allow openat
// unless it creates a setuid file": libseccomp drops conditional rules
// beside an unconditional one for the same call. The argument program's
// refusals are the kernel's own, uncounted.
func compilePolicy() (progs [][]byte, pfc []string, err error) {
	args, err := newFilter(seccomp.ActAllow)
	if err != nil {
		return nil, nil, err
	}
	defer args.Release()
	for _, cmd := range deniedIoctls {
		if err := addRule(args, "ioctl", actDeny, cond(1, seccomp.CompareMaskedEqual, 0xffffffff, cmd)); err != nil {
			return nil, nil, err
		}
	}
	for _, cmd := range deniedFcntls {
		if err := addRule(args, "fcntl", actDeny, cond(1, seccomp.CompareMaskedEqual, 0xffffffff, cmd)); err != nil {
			return nil, nil, err
		}
	}
	// socketpair: AF_UNIX, and a type outside socketPairTypes is refused
	// (the main program allows it, so that every refusal is EPERM).
	if err := addRule(args, "socketpair", actDeny, cond(0, seccomp.CompareNotEqual, unix.AF_UNIX)); err != nil {
		return nil, nil, err
	}
	for typ := uint64(0); typ <= sockTypeMask; typ++ {
		if slices.Contains(socketPairTypes, typ) {
			continue
		}
		if err := addRule(args, "socketpair", actDeny, cond(1, seccomp.CompareMaskedEqual, sockTypeMask, typ)); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range fastOpenFlags {
		if err := addRule(args, c.name, actDeny, cond(c.arg, seccomp.CompareMaskedEqual, unix.MSG_FASTOPEN, unix.MSG_FASTOPEN)); err != nil {
			return nil, nil, err
		}
	}
	// Calls that may aim at another process: only at the caller itself
	// (pid, or who, 0), as prlimit64 below, so that no target slows or
	// pins a process outside the action, its broker included.
	for _, r := range selfOnly {
		for _, c := range r.conds {
			if err := addRule(args, r.name, actDeny, c); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, c := range createMode {
		for _, bit := range []uint64{unix.S_ISUID, unix.S_ISGID} {
			setid := cond(uint(c.mode), seccomp.CompareMaskedEqual, bit, bit)
			flagSets := [][]seccomp.ScmpCondition{{setid}}
			if c.flags >= 0 { // only when the call creates: O_CREAT or O_TMPFILE
				flagSets = [][]seccomp.ScmpCondition{
					{cond(uint(c.flags), seccomp.CompareMaskedEqual, unix.O_CREAT, unix.O_CREAT), setid},
					{cond(uint(c.flags), seccomp.CompareMaskedEqual, unix.O_TMPFILE, unix.O_TMPFILE), setid},
				}
			}
			for _, conds := range flagSets {
				if err := addRule(args, c.name, actDeny, conds...); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	filters := []*seccomp.ScmpFilter{args}
	for _, hints := range []bool{false, true} {
		main, err := mainFilter(hints)
		if err != nil {
			return nil, nil, err
		}
		defer main.Release()
		filters = append(filters, main)
	}
	for _, f := range filters {
		p, err := export(f.ExportBPF)
		if err != nil {
			return nil, nil, err
		}
		text, err := export(f.ExportPFC)
		if err != nil {
			return nil, nil, err
		}
		progs, pfc = append(progs, p), append(pfc, string(text))
	}
	return progs, pfc, nil
}

// writeIntent are the open flags that ask to change a file (O_TMPFILE
// needs O_WRONLY or O_RDWR); writeOpens the calls they are compared on,
// by the flags' argument (-1: creat, which always creates).
const writeIntent = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

var writeOpens = []flagsArg{{"open", 1}, {"openat", 2}, {"creat", -1}}

type flagsArg struct {
	name string
	arg  int
}

// mainFilter is the main program; with hints, it notifies every open
// with write intent as well (writeIntent, compared masked on the flags'
// low bits), for the broker's observer of write-intent opens, which
// always lets the kernel continue them: Landlock decides. An open the
// argument program refuses (a setuid or setgid file created) is EPERM
// there, which wins over the notification.
func mainFilter(hints bool) (*seccomp.ScmpFilter, error) {
	main, err := newFilter(actAbsent)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			main.Release()
		}
	}()
	for _, name := range strings.Fields(allowed + " ioctl") {
		if hints && slices.ContainsFunc(writeOpens, func(o flagsArg) bool { return o.name == name }) {
			continue // notified with write intent, below
		}
		if err := addRule(main, name, seccomp.ActAllow); err != nil {
			return nil, err
		}
	}
	for _, o := range writeOpens {
		if !hints {
			break
		}
		if o.arg < 0 {
			if err := addRule(main, o.name, seccomp.ActNotify); err != nil {
				return nil, err
			}
			continue
		}
		if err := addRule(main, o.name, seccomp.ActAllow, cond(uint(o.arg), seccomp.CompareMaskedEqual, writeIntent, 0)); err != nil {
			return nil, err
		}
		for bit := uint64(1); bit <= writeIntent; bit <<= 1 {
			if bit&writeIntent == 0 {
				continue
			}
			if err := addRule(main, o.name, seccomp.ActNotify, cond(uint(o.arg), seccomp.CompareMaskedEqual, bit, bit)); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range strings.Fields(denied + " " + notified + " " + network) {
		if err := addRule(main, name, seccomp.ActNotify); err != nil {
			return nil, err
		}
	}
	// clone with a namespace flag is notified too, flag by flag, and the
	// broker answers ENOSYS, as the filter's default did before it was
	// counted; without one it is allowed (below).
	for bit := uint64(1); bit <= namespaceFlags; bit <<= 1 {
		if bit&namespaceFlags == 0 {
			continue
		}
		if err := addRule(main, "clone", seccomp.ActNotify, cond(0, seccomp.CompareMaskedEqual, bit, bit)); err != nil {
			return nil, err
		}
	}
	conditional := []struct {
		name string
		c    seccomp.ScmpCondition
	}{
		{"clone", cond(0, seccomp.CompareMaskedEqual, namespaceFlags, 0)},
		{"personality", cond(0, seccomp.CompareEqual, personality.Linux)},
		{"personality", cond(0, seccomp.CompareEqual, personality.Query)},
		{"prlimit64", cond(0, seccomp.CompareEqual, 0)}, // only its own limits
		{"seccomp", cond(1, seccomp.CompareMaskedEqual, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, 0)},
	}
	for _, r := range conditional {
		if err := addRule(main, r.name, seccomp.ActAllow, r.c); err != nil {
			return nil, err
		}
	}
	// A filter of the target's own may be added, never with a listener:
	// the newest filter's notification wins, so once the broker's listener
	// is closed (the broker crashed, was killed or restarted) a target
	// holding one could answer CONTINUE to every call notified here.
	// EPERM wins over any notification: only the broker ever answers one,
	// and without it each is ENOSYS. prctl(PR_SET_SECCOMP) passes no flags.
	// The rule is here, not in the argument program, which is loaded
	// before this one is loaded with its own listener.
	if err := addRule(main, "seccomp", actDeny, cond(1, seccomp.CompareMaskedEqual,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)); err != nil {
		return nil, err
	}
	ok = true
	return main, nil
}

// newFilter returns a native-architecture filter whose other-architecture
// and x32 entries kill the process.
func newFilter(def seccomp.ScmpAction) (*seccomp.ScmpFilter, error) {
	f, err := seccomp.NewFilter(def)
	if err != nil {
		return nil, fmt.Errorf("new filter: %w", err)
	}
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		f.Release()
		return nil, fmt.Errorf("set the bad-architecture action: %w", err)
	}
	// A binary search on the syscall number, not a list: at load the kernel
	// runs the filter once per syscall number for its allow cache, and the
	// list cost 0.13 ms there; the target's uncached calls pay it too.
	if err := f.SetOptimize(2); err != nil {
		f.Release()
		return nil, fmt.Errorf("ask for a binary tree: %w", err)
	}
	return f, nil
}

// addRule adds one rule; a name unknown to libseccomp is skipped, which
// leaves that call to the filter's default.
func addRule(f *seccomp.ScmpFilter, name string, act seccomp.ScmpAction, conds ...seccomp.ScmpCondition) error {
	nr, err := seccomp.GetSyscallFromName(name)
	if err != nil {
		return nil
	}
	if len(conds) == 0 {
		err = f.AddRule(nr, act)
	} else {
		err = f.AddRuleConditional(nr, act, conds)
	}
	if err != nil {
		return fmt.Errorf("add rule for %s: %w", name, err)
	}
	return nil
}

func cond(arg uint, op seccomp.ScmpCompareOp, values ...uint64) seccomp.ScmpCondition {
	c, err := seccomp.MakeCondition(arg, op, values...)
	if err != nil {
		panic("seccompgen: internal error: " + err.Error())
	}
	return c
}
