// Package linux is the Linux launcher: it turns one verified SpawnRequest
// into one confined execveat, or refuses. It is warrant's trusted base.
//
// # Fixed step order
//
// Main runs these steps on one thread (runtime.LockOSThread, never
// unlocked), in this order, and each one fails closed: any doubt ends in a
// Refused{code, detail} reply, exit status 125 and no exec.
//
//  1. fds 0–2 open; every ignored signal back to SIG_DFL; empty signal mask;
//     the codec primed (wire.Prime) before the request comes.
//  2. Read exactly one datagram from fd 3, which must be an AF_UNIX
//     SOCK_SEQPACKET socket whose SO_PEERCRED is our parent and our uid:
//     bounded recvmsg with MSG_CMSG_CLOEXEC, MSG_TRUNC and MSG_CTRUNC
//     refused, only SCM_RIGHTS accepted, a queued second datagram refused;
//     strict wire decoding (canonical CBOR, every string valid UTF-8 without
//     NUL, argv non-empty); the environment checked by envpolicy.Check
//     (the proxy variables exactly, only with an egress port);
//     exactly FDCount descriptors, each fstat-checked for its role
//     (directory, writable pipes, regular snapshot files).
//  3. The workspace descriptor's (dev, ino, mnt_id, birth time) equal the
//     approved ones.
//  4. openat2(workspace, cwd, RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS|
//     NO_XDEV), EAGAIN and EINTR retried at most 16 times (internal/retry);
//     identity equal; fchdir.
//  5. The executable (and a script's pinned interpreter) re-opened with
//     RESOLVE_NO_SYMLINKS; fstat identity equal. Sealed snapshot: content
//     bound in a sealed memfd, the broker's (snapshot.Verify) or our own
//     copy (snapshot.Create), SHA-256 equal to the approved digest; a script
//     runs as "interpreter [arg] /proc/self/fd/N args…", N its sealed copy
//     (the one descriptor besides 0–2 the target inherits); without
//     executable memfds it refuses, never exec by path. In place: the
//     verified descriptor itself is executed, a script under its real path;
//     Ready says what binds the bytes (unwritable, or a witness). A "#!"
//     file without a pinned interpreter is refused.
//  6. Only when the request lists protected entries: unshare(CLONE_NEWNS) and
//     MS_PRIVATE|MS_REC on /, so that no mount propagates into or out of the
//     namespace; the workspace opened again by its path in the new namespace
//     (RESOLVE_NO_SYMLINKS, identity equal but for the mount id); each entry, in
//     the request's order (parents first), opened beneath it without following
//     links and, if it is still a directory or a regular file (a read-only one
//     only with no other name), cloned with open_tree (recursively, so that no
//     mount beneath is uncovered), made MOUNT_ATTR_RDONLY throughout (or only
//     pinned: a read-write bind of a gitdir, so that it cannot be renamed away)
//     with NOSUID and NODEV, and moved onto itself by descriptor; then the cwd
//     entered again beneath it (identity equal). It needs CAP_SYS_ADMIN over the
//     mount namespace: a root broker's launcher has it; an ordinary user's
//     broker starts the launcher in a user namespace of its own that maps only
//     its uid and gid (setgroups denied), with CAP_SYS_ADMIN and CAP_SETPCAP
//     ambient across that one exec. Without it: refused. It is safe because
//     nothing it grants outlives step 8: every capability, in every set and the
//     bounding set, is dropped there, no_new_privs is set, the target runs as
//     the same uid, and seccomp refuses every mount call, unshare and setns
//     (step 10); the binds only take rights away. In the user namespace another
//     owner's file reads as the overflow uid, which step 5 accounts for (seen).
//  7. 0 = /dev/null (checked to be 1:3), 1/2 = the pipes, everything else
//     close-on-exec (close_range).
//  8. setsid; rlimits CPU, FSIZE, NOFILE from the profile and CORE,
//     MSGQUEUE, NICE, RTPRIO, RTTIME = 0; personality(PER_LINUX); securebits
//     NOROOT (locked) so uid 0 gains nothing at exec; ambient, inheritable,
//     permitted and effective capabilities emptied and checked, and the
//     bounding set too when the launcher holds CAP_SETPCAP (an ordinary
//     user's full bounding set cannot be shrunk, and grants nothing under
//     no_new_privs); no_new_privs.
//  9. Landlock: ABI ≥ max(4, policy floor) or refuse, counted by
//     internal/landlockabi as the broker counts it (an ABI 6+ kernel without
//     the signal-scope erratum fix counts as 5); every fs, net and scope right
//     the running ABI knows is handled, as go-landlock's presets V1…V11 name
//     them (a newer kernel is handled, and reported in Ready, as ABI 11);
//     read+execute on the runtime paths and /etc's listed entries
//     (policy.read_entries); every right but making devices or sockets, ioctl
//     on devices and connecting to pathname sockets on the workspace (by its
//     verified descriptor), HOME, TMPDIR and any extra read-write path;
//     read+write on listed character devices; no network rule but TCP connect
//     to the egress port when the request has one (the broker's proxy; a
//     second wall, as Landlock names a port, not an address; no bind);
//     abstract unix sockets and signals scoped (ABI 6+); with AuditDenials
//     (ABI 7) the target's refusals logged, and none of a domain it makes,
//     which could forge them (broker/internal/audit). Each policy path is
//     opened with RESOLVE_NO_SYMLINKS|NO_MAGICLINKS and granted only if its
//     (dev, ino) is the broker's pin (IDENTITY_DRIFT otherwise; an /etc entry
//     no longer its pin is skipped: it grants less), so a granted directory
//     swapped after approval grants nothing more; HOME and TMPDIR, the
//     broker's own directories, are opened as named.
//  10. seccomp, last: two programs compiled by libseccomp at build time
//     (seccompgen; a test proves the embedded bytes are libseccomp's output,
//     seccomp_GOARCH.txt disassembles them; each binary-searches the syscall
//     number), loaded as embedded; the SHA-256 of both goes into Ready. No
//     cgo at run time. The argument program, first, denies ioctl TIOCSTI and
//     TIOCLINUX compared on the command's low 32 bits, a file created with
//     a setuid or setgid bit, fcntl F_SETLEASE and F_NOTIFY (a lease stalls
//     every other opener of a file the target's uid owns), and socketpair
//     other than AF_UNIX SOCK_STREAM or SOCK_SEQPACKET (type masked with
//     SOCK_TYPE_MASK): a datagram end may sendto any pathname socket, which
//     Landlock mediates only from ABI 9 (handled in step 9), and sendmsg's
//     address lies where no filter can read it; and sendto, sendmsg and
//     sendmmsg with MSG_FASTOPEN, which connects a TCP socket without
//     connect (TestNetworkCallsUnderTheFilter). The main one kills a
//     foreign architecture or an x32 entry, allows a Docker-like list,
//     notifies the named denials (socket, bind, listen, ptrace,
//     process_vm_*, io_uring_*, bpf, perf_event_open, userfaultfd,
//     fanotify, keyrings, every mount call, unshare, setns, kexec, modules,
//     handles, chroot, setsid, setpgid, …, and clone with a namespace
//     flag), which the broker refuses (EPERM; ENOSYS for clone, as before
//     they were counted) and counts, but for an egress lease's TCP socket,
//     which it lets through (listen stays denied: Landlock does not see the
//     port listen binds an unbound socket to); the metadata calls and
//     inotify_add_watch, which it answers (step 11); and connect, which it
//     answers too and never lets continue: EACCES without a lease, else it
//     connects its own copy of the target's socket to its proxy, or
//     refuses. It answers ENOSYS for the rest (clone3 included, so libc
//     falls back to clone); clone only without namespace flags,
//     personality only PER_LINUX or a query, prlimit64 only on itself,
//     seccomp only without SECCOMP_FILTER_FLAG_NEW_LISTENER (EPERM with
//     it; prctl(PR_SET_SECCOMP) passes no flags). The main program is
//     loaded with SECCOMP_FILTER_FLAG_NEW_LISTENER, and no filter after it
//     can have a listener: the newest filter's notification would win, so
//     a target holding one could answer CONTINUE to every notified call
//     once the broker's listener was closed (the broker crashed, was
//     killed or restarted); EPERM wins over any notification. So only the
//     broker ever answers a notified call, and without its answer each is
//     ENOSYS (TestNotifiedCallsWithoutTheBroker: socket, unshare and chmod
//     with the listener closed, and a listener of the target's own). Hence
//     no kernel rule refuses a chmod with a setuid or setgid bit: the
//     broker alone performs a target's chmod, refuses such a mode under
//     its own rule (recorded; a rule here would refuse it unrecorded) and
//     masks both bits off whatever it performs (metadata.setMode). With
//     ObserveWrites the main program is its hints variant, which also
//     notifies open and openat with write intent and every creat: the
//     broker records a hint and always lets it continue, Landlock decides
//     (broker/internal/metadata). Ready carries the loaded digests.
//  11. Send Ready with the measured facts and the listener (SCM_RIGHTS),
//     whose metadata calls the broker answers (why: docs/architecture.md
//     §2.5) and whose named denials it refuses and counts
//     (broker/internal/metadata), and close the listener.
//  12. Read one more datagram, the broker's Proceed, sent once it has
//     checked Ready and the action's EXECUTING record is durable (one
//     queued when the request was read was refused in step 2); then clear
//     the signal mask again and execveat(memfd, "", argv, env,
//     AT_EMPTY_PATH). Anything but Proceed (descriptors, another message,
//     the socket's end), or a failed execveat: ExecFailed{errno}, exit 127,
//     nothing executed. EOF on the close-on-exec reply socket tells the
//     broker the exec happened.
//
// Where each step lives (Main and prepare, in launch_linux.go, call them
// in this order):
//
//	step  file                   function
//	1     inherit_linux.go       cleanSlate (unignoreSignal: sys_unsafe_linux.go)
//	2     request_linux.go       readRequest
//	3     cwd_linux.go           checkWorkspace
//	4     cwd_linux.go           enterCwd
//	5     binding_linux.go       bindExecutable
//	6     mountns_linux.go       protectPaths
//	7     inherit_linux.go       setStdio
//	8     creds_linux.go         dropPrivileges
//	9     landlock_linux.go      restrictFS
//	10    seccomp_linux.go       installSeccomp (programs: seccomp_GOARCH_linux.go;
//	                             seccompLoad: sys_unsafe_linux.go)
//	11    launch_linux.go        reply (with the listener)
//	12    launch_linux.go        awaitProceed, execution.run (execveat: sys_unsafe_linux.go)
//
// # Invariants
//
// One request, its Proceed, one exec; no goroutines, no configuration, no
// logging beyond the replies. The bytes handed to the kernel are the bytes
// whose digest was approved. Restrictions are per thread (no TSYNC), and
// so is step 6's mount namespace: they are applied on, and inherited
// from, the thread that calls execveat.
//
// # Threat model
//
// The broker's request and descriptors are hostile input: every field is
// re-validated and every descriptor re-measured here. The workspace,
// executable and cwd may change between approval and launch; the launcher
// binds identities by descriptor and content by sealed memfd. The target
// is hostile: it starts with fds 0–2 only, no capabilities, no_new_privs,
// an allowlisted environment, and the Landlock and seccomp domain of
// steps 9–10, which its descendants inherit. Out of scope: the kernel
// itself, a root user outside the action, and shared libraries and the
// ELF interpreter, which are read from the read-only runtime paths, not
// bound by digest. Known gaps: below Landlock ABI 6 signals to processes
// outside the action are not scoped (the policy's MinLandlockABI decides
// whether that is acceptable; landlockabi.Floor demands ABI 6 wherever
// the kernel has it): a target may then kill a broker of its uid, which
// leaves every notified call ENOSYS, never performed (step 10); a
// directory's identity is (dev, ino, mnt_id, birth time), so a cwd
// removed and recreated on a reused inode number is told apart only where
// the filesystem records birth times (ext4, xfs, btrfs, tmpfs do).
//
// # Dependencies and size
//
// The Landlock ruleset calls and rights are go-landlock's syscall package
// (the ABI is counted by internal/landlockabi, shared with the broker); its
// high-level package supplies only the per-ABI masks, never Restrict (best
// effort, all threads). The syscall package links libcap's psx without
// calling it: build with CGO_ENABLED=0 (as the integration tests do), else
// psx's cgo variant makes a dynamically linked program. cmd/launcher and
// this package, seccompgen included, are 1,871 non-test, non-blank lines
// (the budget is 2,000).
package linux
