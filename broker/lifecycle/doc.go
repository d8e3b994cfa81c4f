// Package lifecycle launches one approved action through the launcher and
// supervises it until its whole process group is confirmed gone, or until
// it must admit that it cannot confirm that (docs/architecture.md §2.6).
//
// # What it guarantees
//
//   - The outcome is decided from facts observed here: the launcher's reply
//     (Refused, Ready then EOF, ExecFailed), the exit and wait4 status of
//     the root process, and the group-gone evidence; never from the
//     target's output.
//   - Ready followed by EOF on the close-on-exec reply socket is the only
//     proof that execveat succeeded (the stdlib forkExec pattern).
//   - Timeout, cancel and the hard output budget all end the group the same
//     way: SIGTERM and SIGCONT to the group, the grace period, SIGKILL
//     (cgroup.kill when a cgroup is delegated), then reaping, then
//     confirmation that no member is left.
//   - After the root exits, remaining members are killed too: an action
//     ends with its root process.
//   - The group id cannot be reused by an unrelated process while it is
//     being signalled: the root is left a zombie (observed through its
//     pidfd on Linux, a kqueue on macOS, not reaped) until every other
//     member is confirmed gone; once it is reaped, kill(-pgid, 0) must
//     return ESRCH.
//   - "Gone" means cgroup.events says "populated 0" when the action has a
//     cgroup, and in every case that a /proc scan finds no process in the
//     group but the root zombie (no member can leave the group on Linux:
//     the launcher's seccomp policy denies setsid and setpgid). If that cannot be confirmed within
//     confirmBound, the outcome is unknown: never a tidy success.
//   - Output is drained to EOF with a deadline; memory is bounded by the
//     sinks, not by what the target prints.
//
// On Linux the broker must call BecomeSubreaper once at start, so that
// descendants orphaned inside an action are re-parented to it and can be
// reaped here.
//
// # macOS (darwin): built, vetted, never run
//
// Nothing here has run on a Mac: the darwin files are cross-compiled and
// vetted with GOOS=darwin, and only their platform-neutral parts (the
// process-table walk in procs.go, the stream reply reader) are tested, on
// Linux. The capability stays "unverified" until `broker probe` passes on
// a real Mac. The supervisor, handshake, escalation and drain are the same
// code as on Linux; the differences are:
//
//   - The request socket is SOCK_STREAM (macOS has no SOCK_SEQPACKET for
//     AF_UNIX), made close-on-exec with fcntl under the fork lock; the
//     request is one wire frame with its fds in one SCM_RIGHTS message, and
//     replies are read as frames. EOF between frames after Ready proves the
//     exec; EOF inside a frame does not.
//   - No pidfd: the root is watched with kqueue EVFILT_PROC NOTE_EXIT
//     (x/sys has no waitid for darwin), which reports the exit without
//     reaping, so the zombie still holds the group id while the group is
//     signalled. Signals to the root go by pid, safe because only we can
//     reap it.
//   - No cgroups: "gone" is decided from one sysctl kern.proc.all snapshot
//     per pass. It must show no member of the group but the root zombie,
//     and no leaver: a process found by parent pid below a group member
//     but outside the group (Seatbelt cannot deny setsid or setpgid).
//     Leavers seen are killed by pid, but once one has been seen the group
//     is not called gone and the outcome is unknown, because what a leaver
//     started cannot be traced.
//   - A leaver whose parent exited before any survey is re-parented to
//     launchd and cannot be found at all. So on macOS even a confirmed end
//     covers the process group only: Result.LeaversUntracked is set, and
//     the Evidence sentence says that such processes are not covered. The
//     receipt must carry that, not a claim of complete cleanup.
//   - No subreaper: BecomeSubreaper does nothing. A descendant orphaned
//     inside an action is re-parented to launchd, which reaps it; while it
//     lives it is still in the group and is killed with it.
//
// Other platforms refuse to launch (SANDBOX_UNAVAILABLE).
package lifecycle
