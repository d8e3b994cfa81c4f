// Package metadata answers a target's metadata calls — chmod, chown,
// extended attributes and times, which Landlock does not govern — so that
// the writable scope is the only thing a target can change, by any call;
// its inotify watches, so that it watches nothing else; its socket and
// connect calls, so that it reaches its egress proxy and nothing else
// (egress_linux.go); and it refuses and counts the calls the launcher's
// filter denies by name. It records every refusal (docs/json.md,
// Denials), and, where asked, hints of the writes Landlock refuses
// (hint_linux.go).
//
// # Mechanism
//
// The launcher's main seccomp filter returns SECCOMP_RET_USER_NOTIF for
// the whole family (chmod fchmod fchmodat fchmodat2 chown fchown fchownat
// lchown setxattr lsetxattr fsetxattr removexattr lremovexattr
// fremovexattr utime utimes futimesat utimensat) and hands its listener to
// the broker with Ready. The kernel stops each such call and the broker
// decides it here: it reads the call's arguments from the caller's memory
// (/proc/PID/mem), opens the object the caller names — relative to the
// caller's cwd or descriptor, following symlinks exactly as the call
// would — and proves it lies beneath a root of the writable scope (the
// workspace, the action's HOME and TMPDIR, configured read-write paths,
// each of the last opened without following symlinks and taken only
// while it is the (dev, ino) its pin records, as the launcher grants it):
// the object's path, as the kernel names it, must start with a root's
// path, and opening that remainder beneath the root with openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS must reach the same inode. That
// path is then opened again from the caller's own root (/proc/PID/root,
// RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS) and must reach the same inode
// there: the broker acts on the object as the caller's mount namespace
// shows it (view_linux.go). Where the launcher made a private one with
// the protected paths bound read-only, a change there is EROFS, as the
// target's own would be, also for an absolute path or one through an
// absolute symlink, which the broker resolves from its own root. Only then
// does the broker perform the call itself, on that descriptor, and return
// its result. Everything else is answered EPERM (or the error the lookup
// gave, such as ENOENT). The kernel never continues a call the broker
// decides on after reading the caller's memory
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE is used for an egress socket(),
// decided on registers alone, and for an observed open, decided by
// Landlock, below), so what runs is what was checked: the broker acts on
// the descriptor it resolved, not on the caller's bytes again.
//
// inotify_add_watch is notified too (Landlock does not govern it either,
// and a watch would deliver the names the host creates in a directory
// outside): its object is resolved and proven the same way (a
// read-only runtime directory is refused too), then the broker takes a
// duplicate of the caller's inotify descriptor with pidfd_getfd (a pidfd
// of the calling thread, opened while the notification is pending; the
// descriptor must read back as anon_inode:inotify), adds the watch on
// /proc/self/fd/OBJ with the caller's mask (IN_DONT_FOLLOW was honoured
// when OBJ was opened) and returns the watch descriptor as the call's
// result (inotify_linux.go). fanotify is denied by the launcher's filter.
//
// A file with no name left (nlink 0: unlinked, O_TMPFILE) may have its
// metadata changed through a descriptor: nothing outside the action can
// see the change. A memfd is not such a file here: the broker's sealed
// snapshots are memfds, shared by every action of one program.
//
// # Egress
//
// connect is notified always, socket counted or let through. Without
// egress (AllowEgress) every socket is refused and counted as below, and
// every connect is EACCES (as Landlock refuses one), recorded with the
// address as read ("93.184.216.34:443", "AF_UNIX /run/x.sock", a family),
// rule no-network (host-socket for AF_UNIX). With egress, socket() of an
// AF_INET or AF_INET6 TCP stream (SOCK_NONBLOCK and SOCK_CLOEXEC the only
// flags) is continued: every argument is a register, which the caller,
// stopped until the answer, cannot change, so the kernel makes exactly
// the socket decided; any other socket is refused and counted. A connect
// is never continued. Its address is read once, and only decides: where
// it names the proxy (127.0.0.1:P, ::ffff:127.0.0.1:P on an AF_INET6
// socket), the broker takes a duplicate of the caller's socket
// (pidfd_getfd, as for a watch), requires an AF_INET or AF_INET6 TCP
// stream of that family (SO_DOMAIN, SO_TYPE, SO_PROTOCOL), checks the
// notification still valid, binds it to the proxy's loopback address,
// port 0, unless it is bound already (there, or it is refused), tells
// the proxy its source (Egress.Admit), and connects it to the proxy
// address the broker holds, never the caller's bytes again; the caller
// gets that connect's result (0, EINPROGRESS, EALREADY, EISCONN, …). A
// socket connecting or connected already is not admitted again; one
// whose connect fails has its admission withdrawn (Egress.Withdraw).
// Before the bind, SO_REUSEADDR and SO_REUSEPORT are cleared, so that
// the port is the socket's alone (cleared, not refused: client libraries
// set them); a bind that leaves the port 0 (IP_BIND_ADDRESS_NO_PORT) is
// refused, since the source would be known only after the connect. A
// blocking connect, which holds the notification loop, is bounded
// (connectLimit, 5 s: a loopback connect takes microseconds): the socket
// is shut down and the caller gets ETIMEDOUT, where the target made the
// handshake fail silently (a TCP_MD5SIG key for the proxy's address,
// TCP_SYNCNT=127: hours of SYNs). A connect the caller restarts after a
// signal interrupted it is answered anew, from the socket's state: it
// gets EALREADY or EISCONN where the kernel's own restart would return
// 0. A restart whose address another thread rewrote since is refused,
// and recorded under the address it read, though the socket stays
// connected to the proxy. The loopback source keeps every route on the
// loopback device whatever options the target set: the kernel refuses it
// on another device, where a source route (IP_OPTIONS, with CAP_NET_RAW)
// would send the SYN off the host to its first hop. Every other connect
// is EACCES, recorded under not-through-proxy. The proxy's own refusals
// of destinations come in through Record, safe for concurrent use.
//
// # Rules the broker adds
//
// The broker acts with its own credentials, which may be more than the
// target's (a root broker keeps its capabilities; the target has none),
// so it applies the owner's rules itself: the object must be owned by the
// broker's uid (the target's uid), for a watch too (a root broker would
// otherwise watch what the target may not read); chmod never sets setuid
// or setgid (a mode with one is refused under its rule, and setMode,
// which performs every chmod, masks both off besides: the broker is the
// only one who performs a target's chmod, so the launcher's filter has no
// rule of its own for it, which would refuse unrecorded; a file created
// with one is refused by the argument filter before the broker is
// asked); chown may only set the caller's own uid and one of its groups;
// extended attributes are only the user.* namespace and POSIX ACLs, never
// security.* (file capabilities) or trusted.*. Setting times requires
// ownership, also for "now" (stricter than the kernel, which lets a
// writer set the current time). Only regular files, directories and
// symlinks are acted on: a device node or FIFO (made in the workspace,
// or a hard link to one outside) is refused, since its mode decides who
// on the host may open the device. Nothing is changed on a read-only
// mount or file system (EROFS).
//
// # Refused calls, counted
//
// The filter notifies every call it refuses by name too (socket, bind,
// listen, ptrace, process_vm_*, io_uring_*, mount calls, unshare, setns,
// clone with a namespace flag, bpf, perf_event_open, keys, modules,
// kexec, setsid, setpgid, …: seccompgen's denied list), so that a run can say
// what its sandbox refused (counted_linux_amd64.go). The broker answers
// each from its registers alone with the errno the filter gave before
// it counted them (EPERM; ENOSYS for clone), reads nothing of the caller
// and does nothing; the record names what the registers carry (a
// socket's family, type and protocol, namespace flags, a ptrace
// request), source "filter-count", and a socket's family by name apart
// ("other" for one not named here), which its class is counted under. A
// test reads the launcher's disassembled program and requires every
// notified call to be one the broker knows, by the same name; another
// (TestClassesAreBounded) that the classes these tables and answerRules
// (the broker's rules for each effect it answers, which record holds
// every refusal to) allow fit wire.MaxDenialCounts, so that the exact
// count of every class is kept whatever objects a target chooses.
//
// Every refusal by one of the rules above is recorded too, source
// "broker", under the rule (wire.DenialRule: outside the writable scope,
// not the owner, a setuid or setgid bit, an attribute namespace, another
// owner, a device node or FIFO, a read-only mount, a caller the broker
// could not read, a watch or connect this kernel cannot support: Linux
// before 6.9, without thread pidfds; the egress rules above) and the
// object's path as the broker resolved it (as the caller gave it, where
// it was refused before it was resolved). An error the call itself met
// (ENOENT, EBADF, EINVAL, ELOOP of a loop of symlinks, …) is no refusal,
// and answered as the kernel would; nor is a caller that died mid-call
// (its notification no longer valid when the broker could not read it),
// nor an answer that never reached its caller (a signal interrupted its
// wait: a restarted call is notified, and recorded, again).
// Both go into one bounded record per action (broker/internal/denial),
// which Stop returns; the receipt and the result carry it.
//
// # Hints of writes outside the scope
//
// Landlock refuses a write outside the writable scope by itself and says
// so only in its audit records (ABI 7 with audit), which this broker
// does not read. Where the launcher's request asks for it
// (wire.SpawnRequest.ObserveWrites, which broker/runner sets with
// Options.WriteHints: `broker serve --write-hints`, off by default, since
// each such open then waits for the broker) the launcher loads the hints
// variant of its main program, which also notifies open and openat whose
// flags have write intent (O_WRONLY, O_RDWR, O_CREAT or O_TRUNC, compared
// masked) and every creat; an open the argument program refuses (a
// setuid or setgid file created) is EPERM there, which wins over the
// notification. The server (ObserveWrites, before Serve, adds the source
// "hint") answers each one SECCOMP_USER_NOTIF_FLAG_CONTINUE, always:
// Landlock decides, nothing here does, and nothing read is acted on. It
// reads the path once; a path beneath a root of the writable scope by
// name (relative paths joined to the kernel's name of the caller's cwd
// or descriptor, ".." taken by name) is taken as inside without a
// lookup; one outside by name is resolved as the open would resolve it
// (the file, or for a file to be created its parent directory, opened
// O_PATH from the caller's cwd or descriptor, following symlinks, magic
// links refused), and only if that too lies outside is it recorded:
// effect create (the file does not exist and would be made) or write,
// the call, the object the path the kernel names the file or the parent
// joined with the last component, rule outside-writable-scope, source
// hint. Nothing is recorded for a path the broker could not read, a
// descriptor's /proc link, a device, FIFO or socket (Landlock grants the
// listed devices; a pipe has no path), a file that exists opened only
// for reading, a missing parent, or a caller that died meanwhile. It is
// a hint: the target controls the string and may race the lookup, a
// symlink inside the scope that leads out goes unhinted, and the open
// may still fail for another reason (ENOENT, EACCES by mode); it says
// "the target asked to write X, which lies outside the scope", never
// that anything was prevented by the broker. Other writes Landlock
// refuses (mkdir, rename, unlink, link, truncate) are not observed.
// Each such open costs a round trip (about 10 µs, a lookup more for one
// outside) and counts against the budget below like any notification;
// the records stay bounded (writes and creates of three calls: six
// classes). Without the broker's listener such an open is ENOSYS, as
// every notified call: closed.
//
// # Budget
//
// Every answer costs the broker CPU time (about 20 µs a metadata call,
// 3 to 4 a counted refusal) that no limit of the action counts. The
// listener asks for synchronous wake-ups (Linux 6.6's
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, notify_unsafe_linux.go): caller and
// server switch on one CPU; waking the caller on another one cost the
// server about 19 µs a counted refusal on a 2-CPU virtual machine. Each
// action may have Burst (100,000) calls answered at once, then Rate
// (10,000) a second; past that the server
// holds the next answer back until the rate allows it (budget_linux.go):
// the caller waits in the kernel, and no call fails for it. The server's
// loop has its OS thread to itself, whose CPU time is the action's
// metadata work; Stop returns it with the counts and the time answers
// were held, and the receipt records them (metadata.brokerCpuNs, heldNs).
//
// # Failure
//
// A broker that is gone, or a listener that was never handed over, leaves
// every such call failing (ENOSYS): closed, since no other listener can
// answer it (the launcher's filter refuses seccomp with
// SECCOMP_FILTER_FLAG_NEW_LISTENER). The answers of one action are
// serial, on the server's one thread: one that blocks in the kernel (a
// lookup on a hung network file system, where the caller's own lookup
// would block too; a blocking connect to a proxy that does not accept)
// stalls that action's other notified calls, counted refusals included,
// and its Stop, never another action's. Reading the caller's memory
// fails, for a broker without CAP_SYS_PTRACE, where the caller made itself
// non-dumpable; the call is then refused, as is a watch or a connect wherever
// pidfd_getfd, which needs the same access, is refused (Yama's
// ptrace_scope 2 for a broker without CAP_SYS_PTRACE, or 3; Linux before
// 6.9, which has no thread pidfds). Each notification's id is checked
// valid after the caller's memory and descriptors were read, so a
// recycled pid is never acted for.
package metadata
