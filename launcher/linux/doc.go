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
//  2. Step 9's ruleset is made first (Landlock ABI ≥ 4 or refuse). fd 3
//     must be an AF_UNIX SOCK_SEQPACKET socket whose SO_PEERCRED is our
//     parent and our uid. Each datagram: bounded recvmsg with
//     MSG_CMSG_CLOEXEC, MSG_TRUNC and MSG_CTRUNC refused, only SCM_RIGHTS
//     accepted, strict wire decoding (canonical CBOR, every string valid
//     UTF-8 without NUL). The first may be a Prepare, which carries no
//     descriptor: its /etc entries are granted at once, while a warm
//     launcher waits. Then one SpawnRequest (a datagram queued after it
//     refused): the environment checked by envpolicy.Check (the proxy
//     variables exactly, only with an egress port); exactly FDCount
//     descriptors, each fstat-checked for its role (directory, writable
//     pipes, regular snapshot files); its /etc entries exactly the
//     Prepare's, pins included, or, without one, granted now. Either way
//     they are opened here, with the same privileges.
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
//  6. Only when the request lists protected entries: unshare(CLONE_NEWNS)
//     and MS_PRIVATE|MS_REC on /, so that no mount propagates either way;
//     the workspace opened again by its path there (identity equal but for
//     the mount id); each entry, parents first, opened beneath it without
//     following links and, if still a directory or a regular file (a
//     read-only one only with no other name), cloned recursively with
//     open_tree, made read-only throughout (or only pinned: a read-write
//     bind of a gitdir, which cannot then be renamed away) with NOSUID and
//     NODEV, and moved onto itself by descriptor; the cwd entered again
//     beneath it. It needs CAP_SYS_ADMIN over the mount namespace: a root
//     broker's launcher has it; an ordinary user's broker starts the
//     launcher in a user namespace that maps only its uid and gid
//     (setgroups denied), with CAP_SYS_ADMIN and CAP_SETPCAP ambient across
//     that one exec; without it, refused. Nothing it grants outlives step
//     8 (every capability dropped, no_new_privs, the same uid), seccomp
//     refuses every mount call, unshare and setns (step 10), and the binds
//     only take rights away. There another owner's file reads as the
//     overflow uid, which step 5 accounts for (seen).
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
//     (policy.read_entries, granted at step 2); every right
//     but making devices or sockets, ioctl on devices and connecting to
//     pathname sockets on the workspace (by its verified descriptor), HOME,
//     TMPDIR and any extra read-write path; read+write on listed character
//     devices; no network rule but TCP connect to the egress port when the
//     request has one (the broker's proxy; a second wall, as Landlock names
//     a port, not an address; no bind); abstract unix sockets and signals
//     scoped (ABI 6+); with AuditDenials (ABI 7) the target's refusals
//     logged, and none of a domain it makes, which could forge them
//     (broker/internal/audit). Each policy path is opened with
//     RESOLVE_NO_SYMLINKS|NO_MAGICLINKS and granted only if its (dev, ino)
//     is the broker's pin (IDENTITY_DRIFT otherwise; an /etc entry gone,
//     unreachable or no longer its pin is skipped: it grants less), so a
//     path swapped after approval grants nothing more; HOME and TMPDIR, the
//     broker's own directories, are opened as named.
//  10. seccomp, last: two programs compiled by libseccomp at build time
//     (seccompgen, whose policy_linux.go lists every call and argument
//     rule; a test proves the embedded bytes are its output, and
//     seccomp_GOARCH.txt disassembles them), loaded as embedded, their
//     SHA-256 in Ready; no cgo at run time. The argument program, first,
//     denies the TIOCSTI and TIOCLINUX ioctls, a file created setuid or
//     setgid, fcntl F_SETLEASE and F_NOTIFY, socketpair but AF_UNIX stream
//     or seqpacket (a datagram end may sendto any pathname socket), and
//     MSG_FASTOPEN sends (a connect without connect). The main one kills a
//     foreign architecture or x32 entry, allows a Docker-like list, and
//     notifies the rest the broker answers: the named denials (socket, bind,
//     listen, ptrace, io_uring_*, bpf, every mount call, unshare, setns,
//     clone with a namespace flag, …), which it refuses and counts but for
//     an egress lease's TCP socket; the metadata calls and
//     inotify_add_watch (step 11); and connect, which it never lets
//     continue: it connects its own copy of the socket to its proxy, or
//     refuses. Everything else is ENOSYS (clone3 too: libc falls back to
//     clone). It is loaded with SECCOMP_FILTER_FLAG_NEW_LISTENER and no
//     later filter may have a listener, which would win and could answer
//     CONTINUE once the broker's was closed: only the broker answers a
//     notified call, and without it each is ENOSYS
//     (TestNotifiedCallsWithoutTheBroker). So no kernel rule refuses a
//     setuid chmod: the broker performs every chmod and masks both bits
//     (metadata.setMode). With ObserveWrites the main program is its hints
//     variant, which also notifies opens with write intent: the broker
//     records a hint and lets each continue; Landlock decides.
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
//	2     landlock_linux.go      newRules, fsRules.prepare (the /etc entries)
//	      request_linux.go       readRequest
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
// this package, seccompgen included, are 1,916 non-test, non-blank lines
// (the budget is 2,000).
package linux
