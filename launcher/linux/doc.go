// Package linux is the Linux launcher: it turns one verified SpawnRequest
// into one confined execveat, or refuses. It is warrant's trusted base.
//
// # Fixed step order
//
// Main runs these steps on one thread (runtime.LockOSThread, never
// unlocked), in this order, and each one fails closed: any doubt ends in a
// Refused{code, detail} reply, exit status 125 and no exec. Each step's
// function says exactly what it checks; Main and prepare
// (launch_linux.go) call them in this order.
//
//  1. cleanSlate (inherit_linux.go), installArgs (seccomp_linux.go), while
//     a warm launcher waits: fds 0–2 open, every ignored signal back to
//     SIG_DFL, an empty signal mask, the bounding set emptied with
//     CAP_SETPCAP; no_new_privs and the argument program (the same for
//     every request), which refuses no call the steps make; codec primed.
//  2. newRules, fsRules.prepare (landlock_linux.go), readRequest
//     (request_linux.go): step 9's ruleset is made first (Landlock ABI ≥ 4
//     or refuse). fd 3 must be an AF_UNIX SOCK_SEQPACKET socket whose
//     SO_PEERCRED is our parent and our uid; each datagram is read bounded
//     with MSG_CMSG_CLOEXEC (MSG_TRUNC, MSG_CTRUNC and anything but
//     SCM_RIGHTS refused) and strictly decoded (canonical CBOR, strings
//     valid UTF-8 without NUL). A warm launcher's
//     first datagram may be a Prepare (no descriptor), whose /etc entries
//     are granted while it waits; the SpawnRequest's must then be exactly
//     the Prepare's, pins included, or, without one, are granted now, with
//     the same privileges either way. The environment is checked by
//     envpolicy.Check; exactly FDCount descriptors, each fstat-checked for
//     its role; a datagram queued after the request is refused.
//  3. checkWorkspace (cwd_linux.go): the workspace descriptor's (dev, ino,
//     mnt_id, birth time) equal the approved ones.
//  4. enterCwd (cwd_linux.go): openat2(workspace, cwd, RESOLVE_BENEATH|
//     NO_SYMLINKS|NO_MAGICLINKS|NO_XDEV), identity equal, fchdir.
//  5. bindExecutable (binding_linux.go): the executable, and a script's
//     pinned interpreter, re-opened without following links, identity
//     equal. Sealed snapshot: the bytes in a sealed memfd whose SHA-256 is
//     the approved digest (never exec by path). In place: the verified
//     descriptor itself, Ready saying what binds the bytes. A "#!" file
//     without a pinned interpreter is refused.
//  6. protectPaths (mountns_linux.go), only when the request lists
//     protected entries: a private mount namespace (MS_PRIVATE, nothing
//     propagates either way) where each entry is cloned with open_tree and
//     moved onto itself by descriptor, read-only (a gitdir only pinned),
//     NOSUID and NODEV. It needs CAP_SYS_ADMIN over that namespace (a root
//     broker's launcher, or an ordinary user's in the user namespace the
//     broker starts it in), else refused; nothing it grants outlives step
//     8, and step 10 refuses every mount call, unshare and setns.
//  7. setStdio (inherit_linux.go): 0 = /dev/null (checked 1:3), 1/2 = the
//     pipes, everything else close-on-exec.
//  8. dropPrivileges (creds_linux.go): setsid; rlimits from the profile,
//     CORE, MSGQUEUE, NICE, RTPRIO, RTTIME = 0; PER_LINUX; securebits
//     NOROOT (locked); every other capability set emptied and checked,
//     with CAP_SETPCAP the bounding set too.
//  9. restrictFS (landlock_linux.go): a Landlock domain handling every
//     right the running ABI knows (counted by internal/landlockabi, as the
//     broker counts it; reported in Ready); read+execute on the runtime
//     paths and /etc's listed entries, every right but making devices or
//     sockets, device ioctls and connecting to pathname sockets on the
//     workspace (by its verified descriptor), HOME, TMPDIR and read-write
//     paths, TCP connect only to the egress port, abstract sockets and
//     signals scoped, the target's refusals logged with AuditDenials.
//     Each policy path is opened without following links and granted
//     only if it is the broker's pin (IDENTITY_DRIFT otherwise; an /etc
//     entry gone or changed grants nothing); HOME and TMPDIR, the
//     broker's own directories, are opened as named.
//  10. installSeccomp (seccomp_linux.go), last: the main program, after
//     step 1's, both seccompgen's (libseccomp at build time), loaded as
//     embedded, their SHA-256 in Ready. seccompgen's policy_linux.go is
//     the policy: allowed, refused by argument, refused by name and
//     counted, notified for the broker to answer (the metadata calls,
//     inotify_add_watch, connect; with ObserveWrites, opens with write
//     intent, which it lets continue), and ENOSYS otherwise. The main
//     program's is the one listener; no later filter may have one, so
//     only the broker answers a notified call, and without it each is
//     ENOSYS (TestNotifiedCallsWithoutTheBroker).
//  11. reply (launch_linux.go): Ready with the measured facts and the
//     listener (SCM_RIGHTS), which the broker answers
//     (broker/internal/metadata); the launcher closes its copy.
//  12. awaitProceed, execution.run (launch_linux.go): one Proceed, sent
//     once the broker has checked Ready and the action's EXECUTING record
//     is durable; then the signal mask cleared and execveat(fd, "", argv,
//     env, AT_EMPTY_PATH). Anything but Proceed, or a failed execveat:
//     ExecFailed{errno}, exit 127, nothing executed. EOF on the
//     close-on-exec reply socket tells the broker the exec happened.
//
// The raw system calls go-landlock and x/sys lack are in
// sys_unsafe_linux.go.
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
// outside the action are not scoped (landlockabi.Floor demands ABI 6
// wherever the kernel has it): a target may then kill a broker of its
// uid, which leaves every notified call ENOSYS, never performed; a
// directory's identity is (dev, ino, mnt_id, birth time), so a cwd
// removed and recreated on a reused inode number is told apart only where
// the filesystem records birth times (ext4, xfs, btrfs, tmpfs do).
//
// # Dependencies and size
//
// The Landlock calls and rights are go-landlock's syscall package; its
// high-level package supplies only the per-ABI masks, never Restrict
// (best effort, all threads). The syscall package links libcap's psx
// without calling it: build with CGO_ENABLED=0, else psx's cgo variant
// makes a dynamically linked program. cmd/launcher and this package,
// seccompgen included, stay under 2,000 non-test lines, blank lines and
// comments counted (TestLauncherWithinItsBudget).
package linux
