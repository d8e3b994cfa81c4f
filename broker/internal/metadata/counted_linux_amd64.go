package metadata

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// The calls the launcher's filter notifies only so that each refusal is
// counted (seccompgen's denied list, and clone with a namespace flag):
// the broker answers from the registers alone, with the errno the filter
// itself gave before it counted them, reads nothing of the caller and
// does nothing. What a record names of the object is what the registers
// carry: a socket's family, type and protocol, namespace flags, a
// ptrace request.

// refusedCall is one such call: its name, effect and rule.
type refusedCall struct {
	name   string
	effect wire.DenialEffect
	rule   wire.DenialRule
}

var refusedCalls = func() map[int32]refusedCall {
	m := map[int32]refusedCall{
		unix.SYS_SOCKET: {"socket", wire.EffectSocket, wire.RuleNoNetwork}, // the rule is the family's (socketRule)
		unix.SYS_BIND:   {"bind", wire.EffectSocket, wire.RuleHostSocket},
		unix.SYS_LISTEN: {"listen", wire.EffectSocket, wire.RuleNoNetwork},
		unix.SYS_CLONE:  {"clone", wire.EffectNamespace, wire.RuleNoNamespace},
	}
	for rule, calls := range map[wire.DenialRule]map[wire.DenialEffect][]int32{
		wire.RuleNoPtrace: {wire.EffectPtrace: {unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
			unix.SYS_PIDFD_GETFD}},
		wire.RuleNoIOUring: {wire.EffectIOUring: {unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER}},
		wire.RuleNoMount: {wire.EffectMount: {unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT,
			unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR}},
		wire.RuleNoNamespace: {wire.EffectNamespace: {unix.SYS_UNSHARE, unix.SYS_SETNS}},
		wire.RuleNoSession:   {wire.EffectSession: {unix.SYS_SETSID, unix.SYS_SETPGID}},
		wire.RuleKernelSurface: {
			wire.EffectKernel: {unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD, unix.SYS_KEYCTL,
				unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
				unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_OPEN_BY_HANDLE_AT,
				unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_CHROOT, unix.SYS_ACCT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
				unix.SYS_REBOOT, unix.SYS_QUOTACTL, unix.SYS_SYSLOG, unix.SYS_VHANGUP, unix.SYS_IOPL, unix.SYS_IOPERM,
				unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
				unix.SYS_LOOKUP_DCOOKIE},
			wire.EffectWatch: {unix.SYS_FANOTIFY_INIT, unix.SYS_FANOTIFY_MARK},
		},
	} {
		for effect, nrs := range calls {
			for _, nr := range nrs {
				m[nr] = refusedCall{syscallNames[nr], effect, rule}
			}
		}
	}
	return m
}()

// counted answers a call the filter notifies only to have it refused and
// counted; ok is false for a metadata call or watch.
func counted(d *seccompData) (errno unix.Errno, _ *wire.Denial, ok bool) {
	rc, ok := refusedCalls[d.Nr]
	if !ok || d.Arch != unix.AUDIT_ARCH_X86_64 {
		return 0, nil, false
	}
	a := d.Args
	den := &wire.Denial{Effect: rc.effect, Call: rc.name, Rule: rc.rule, Source: wire.SourceFilterCount}
	errno = unix.EPERM
	switch d.Nr {
	case unix.SYS_SOCKET:
		den.Object, den.Family, den.Rule = socketObject(a[0], a[1], a[2])
	case unix.SYS_CLONE: // the low byte is the exit signal, where unshare has CLONE_NEWTIME
		den.Object, errno = flagNames(a[0]&^(0xff|unix.CLONE_NEWTIME)&namespaceFlags), unix.ENOSYS // the filter's default before
	case unix.SYS_UNSHARE, unix.SYS_SETNS:
		i := 0
		if d.Nr == unix.SYS_SETNS {
			i = 1
		}
		den.Object = flagNames(a[i])
	case unix.SYS_PTRACE:
		den.Object = ptraceRequest(a[0])
	case unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV:
		den.Object = fmt.Sprintf("pid %d", int32(a[0]))
	}
	return errno, den, true
}

const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

var namespaceFlagNames = []struct {
	bit  uint64
	name string
}{{unix.CLONE_NEWNS, "CLONE_NEWNS"}, {unix.CLONE_NEWUTS, "CLONE_NEWUTS"}, {unix.CLONE_NEWIPC, "CLONE_NEWIPC"},
	{unix.CLONE_NEWUSER, "CLONE_NEWUSER"}, {unix.CLONE_NEWPID, "CLONE_NEWPID"}, {unix.CLONE_NEWNET, "CLONE_NEWNET"},
	{unix.CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {unix.CLONE_NEWTIME, "CLONE_NEWTIME"}}

// flagNames names the namespace flags of f, and the rest of it in hex.
func flagNames(f uint64) string {
	var out []string
	for _, n := range namespaceFlagNames {
		if f&n.bit != 0 {
			out = append(out, n.name)
			f &^= n.bit
		}
	}
	if f != 0 || len(out) == 0 {
		out = append(out, fmt.Sprintf("%#x", f))
	}
	return strings.Join(out, "|")
}

var socketTypes = []string{1: "SOCK_STREAM", 2: "SOCK_DGRAM", 3: "SOCK_RAW", 4: "SOCK_RDM", 5: "SOCK_SEQPACKET",
	6: "SOCK_DCCP", 10: "SOCK_PACKET"}

var protocols = map[uint64]map[uint64]string{
	unix.AF_INET:    {unix.IPPROTO_TCP: "IPPROTO_TCP", unix.IPPROTO_UDP: "IPPROTO_UDP", unix.IPPROTO_ICMP: "IPPROTO_ICMP", unix.IPPROTO_MPTCP: "IPPROTO_MPTCP"},
	unix.AF_INET6:   {unix.IPPROTO_TCP: "IPPROTO_TCP", unix.IPPROTO_UDP: "IPPROTO_UDP", unix.IPPROTO_ICMPV6: "IPPROTO_ICMPV6", unix.IPPROTO_MPTCP: "IPPROTO_MPTCP"},
	unix.AF_NETLINK: {unix.NETLINK_ROUTE: "NETLINK_ROUTE", unix.NETLINK_AUDIT: "NETLINK_AUDIT", unix.NETLINK_KOBJECT_UEVENT: "NETLINK_KOBJECT_UEVENT", unix.NETLINK_GENERIC: "NETLINK_GENERIC", unix.NETLINK_SOCK_DIAG: "NETLINK_SOCK_DIAG"},
}

// socketObject names a socket's family, type and protocol (the object),
// its family alone (a closed name: one of families, or "other", which the
// count's class holds whatever number the target chose), and the rule
// that refuses that family: NETLINK_ROUTE (a routine listing of the
// interfaces, as getifaddrs and getaddrinfo's AI_ADDRCONFIG make) and
// AF_UNIX (which could reach the host's services; glibc tries nscd with
// one at every user lookup) apart from the network's.
func socketObject(family, typ, proto uint64) (object, name string, _ wire.DenialRule) {
	family, proto = uint64(uint32(family)), uint64(uint32(proto))
	name, ok := families[family]
	parts := []string{name}
	if !ok {
		name, parts[0] = "other", fmt.Sprintf("family %d", family)
	}
	if t := typ & 0xf; int(t) < len(socketTypes) && socketTypes[t] != "" {
		parts = append(parts, socketTypes[t])
	} else {
		parts = append(parts, fmt.Sprintf("type %d", t))
	}
	if p, ok := protocols[family][proto]; ok && (proto != 0 || family == unix.AF_NETLINK) {
		parts = append(parts, p)
	} else if proto != 0 {
		parts = append(parts, fmt.Sprintf("protocol %d", proto))
	}
	rule := wire.RuleNoNetwork
	switch {
	case family == unix.AF_UNIX:
		rule = wire.RuleHostSocket
	case family == unix.AF_NETLINK && proto == unix.NETLINK_ROUTE:
		rule = wire.RuleInterfaceList
	case family == unix.AF_NETLINK:
		rule = wire.RuleNetlink
	}
	return strings.Join(parts, " "), name, rule
}

var ptraceRequests = map[uint64]string{unix.PTRACE_TRACEME: "PTRACE_TRACEME", unix.PTRACE_ATTACH: "PTRACE_ATTACH",
	unix.PTRACE_SEIZE: "PTRACE_SEIZE", unix.PTRACE_PEEKDATA: "PTRACE_PEEKDATA", unix.PTRACE_PEEKTEXT: "PTRACE_PEEKTEXT"}

func ptraceRequest(r uint64) string {
	if n, ok := ptraceRequests[r]; ok {
		return n
	}
	return fmt.Sprintf("request %d", int64(r))
}

// sysInotifyAddWatch is the one notified call that is a watch.
const sysInotifyAddWatch = unix.SYS_INOTIFY_ADD_WATCH

// callName is a notified call's name.
func callName(nr int32) string {
	if n, ok := syscallNames[nr]; ok {
		return n
	}
	return fmt.Sprintf("syscall %d", nr)
}

// syscallNames are the names of every call the filter notifies (the
// hints program's write-intent opens included).
var syscallNames = map[int32]string{
	unix.SYS_CHMOD: "chmod", unix.SYS_FCHMOD: "fchmod", unix.SYS_FCHMODAT: "fchmodat", unix.SYS_FCHMODAT2: "fchmodat2",
	unix.SYS_CHOWN: "chown", unix.SYS_FCHOWN: "fchown", unix.SYS_FCHOWNAT: "fchownat", unix.SYS_LCHOWN: "lchown",
	unix.SYS_SETXATTR: "setxattr", unix.SYS_LSETXATTR: "lsetxattr", unix.SYS_FSETXATTR: "fsetxattr",
	unix.SYS_REMOVEXATTR: "removexattr", unix.SYS_LREMOVEXATTR: "lremovexattr", unix.SYS_FREMOVEXATTR: "fremovexattr",
	unix.SYS_UTIME: "utime", unix.SYS_UTIMES: "utimes", unix.SYS_FUTIMESAT: "futimesat", unix.SYS_UTIMENSAT: "utimensat",
	unix.SYS_INOTIFY_ADD_WATCH: "inotify_add_watch", unix.SYS_CONNECT: "connect",
	unix.SYS_OPEN: "open", unix.SYS_OPENAT: "openat", unix.SYS_CREAT: "creat",
	unix.SYS_SOCKET: "socket", unix.SYS_BIND: "bind", unix.SYS_LISTEN: "listen", unix.SYS_CLONE: "clone",
	unix.SYS_PTRACE: "ptrace", unix.SYS_PROCESS_VM_READV: "process_vm_readv", unix.SYS_PROCESS_VM_WRITEV: "process_vm_writev",
	unix.SYS_PIDFD_GETFD: "pidfd_getfd", unix.SYS_IO_URING_SETUP: "io_uring_setup", unix.SYS_IO_URING_ENTER: "io_uring_enter",
	unix.SYS_IO_URING_REGISTER: "io_uring_register", unix.SYS_MOUNT: "mount", unix.SYS_UMOUNT2: "umount2",
	unix.SYS_PIVOT_ROOT: "pivot_root", unix.SYS_MOVE_MOUNT: "move_mount", unix.SYS_OPEN_TREE: "open_tree",
	unix.SYS_FSOPEN: "fsopen", unix.SYS_FSCONFIG: "fsconfig", unix.SYS_FSMOUNT: "fsmount", unix.SYS_FSPICK: "fspick",
	unix.SYS_MOUNT_SETATTR: "mount_setattr", unix.SYS_UNSHARE: "unshare", unix.SYS_SETNS: "setns",
	unix.SYS_SETSID: "setsid", unix.SYS_SETPGID: "setpgid", unix.SYS_BPF: "bpf", unix.SYS_PERF_EVENT_OPEN: "perf_event_open",
	unix.SYS_USERFAULTFD: "userfaultfd", unix.SYS_KEYCTL: "keyctl", unix.SYS_ADD_KEY: "add_key",
	unix.SYS_REQUEST_KEY: "request_key", unix.SYS_KEXEC_LOAD: "kexec_load", unix.SYS_KEXEC_FILE_LOAD: "kexec_file_load",
	unix.SYS_INIT_MODULE: "init_module", unix.SYS_FINIT_MODULE: "finit_module", unix.SYS_DELETE_MODULE: "delete_module",
	unix.SYS_OPEN_BY_HANDLE_AT: "open_by_handle_at", unix.SYS_NAME_TO_HANDLE_AT: "name_to_handle_at",
	unix.SYS_CHROOT: "chroot", unix.SYS_ACCT: "acct", unix.SYS_SWAPON: "swapon", unix.SYS_SWAPOFF: "swapoff",
	unix.SYS_REBOOT: "reboot", unix.SYS_QUOTACTL: "quotactl", unix.SYS_SYSLOG: "syslog", unix.SYS_VHANGUP: "vhangup",
	unix.SYS_IOPL: "iopl", unix.SYS_IOPERM: "ioperm", unix.SYS_SETTIMEOFDAY: "settimeofday",
	unix.SYS_CLOCK_SETTIME: "clock_settime", unix.SYS_CLOCK_ADJTIME: "clock_adjtime", unix.SYS_ADJTIMEX: "adjtimex",
	unix.SYS_LOOKUP_DCOOKIE: "lookup_dcookie", unix.SYS_FANOTIFY_INIT: "fanotify_init", unix.SYS_FANOTIFY_MARK: "fanotify_mark",
}
