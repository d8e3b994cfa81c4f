// Package lifecycle launches one approved action through the launcher and
// supervises it until its whole process group is confirmed gone, or until
// it must admit that it cannot confirm that (docs/architecture.md §2.6).
//
// # What it guarantees
//
//   - The outcome is decided from facts observed here: the launcher's reply
//     (Refused, Ready, then after the broker's Proceed EOF or ExecFailed),
//     the exit and wait4 status of the root process, and the group-gone
//     evidence; never from the target's output.
//   - The launcher executes only after Proceed, which is sent once Ready
//     checks and Spec.Durable returned; Ready, Proceed, then EOF on the
//     close-on-exec reply socket is the only proof that execveat succeeded
//     (the stdlib forkExec pattern).
//   - Timeout, cancel and the hard output budget all end the group the same
//     way: SIGTERM and SIGCONT to the group, the grace period, SIGKILL
//     (cgroup.kill, or each listed member with cgroup v1 alone, when the
//     action has cgroups), then reaping, then
//     confirmation that no member is left.
//   - After the root exits, remaining members are killed too: an action
//     ends with its root process.
//   - The group id cannot be reused by an unrelated process while it is
//     being signalled: the root is left a zombie (observed through its
//     pidfd on Linux, a kqueue on macOS, not reaped) until no other member
//     is alive; once it is reaped, kill(-pgid, 0) must return ESRCH. A
//     zombie member still holds the id, so until then it names no other
//     group.
//   - "Gone" means cgroup.events says "populated 0" (or, with cgroup v1
//     alone, that its cgroup.procs lists no process) when the action has
//     cgroups, and in every case that no process is left in the group but
//     the root zombie (no member can leave the group on Linux: the
//     launcher's seccomp policy denies setsid and setpgid), and, once the
//     root is reaped, kill(-pgid, 0) returns ESRCH. Without cgroups, or
//     while they hold a process, that is a scan of every process in
//     /proc. Once the cgroups hold none, nothing of the group is alive
//     and no process is looked at: only zombies can be left, each this
//     broker's child (an orphan re-parented to it) or on its way to
//     becoming one (Linux takes a process out of its cgroup before it
//     re-parents its children), so the root is reaped, then those zombies
//     as they arrive (wait4 of -pgid), until kill(-pgid, 0) returns
//     ESRCH. If that cannot be confirmed within confirmBound, the outcome
//     is unknown: never a tidy success.
//   - Output is drained to EOF with a deadline; memory is bounded by the
//     sinks and one read buffer per stream (captureRead), not by what
//     the target prints. On Linux a stream whose pipe is found full is
//     given a 1 MiB pipe (capture_linux.go), so that a flood costs fewer
//     round trips between target and broker; a refused resize changes
//     nothing but their number.
//
// # Egress (Linux)
//
// An action with an egress grant (Spec.Egress) gets a session of the
// broker's one egress proxy (broker/internal/egress), opened with the
// metadata server that answers its calls, before the launcher's Ready:
// the server admits the target's connects to the proxy into that
// session, and records the proxy's refusals beside its own. At the end
// the server is stopped first, so that no connect is admitted after, and
// then the session is closed: Result.Egress is what it carried. A
// request whose egress port is not the grant's proxy's, a grant without
// a proxy, and a grant on macOS (where nothing answers connect) are
// refused before a launcher starts (SANDBOX_UNAVAILABLE): never a run
// without its proxy. Without a grant nothing of this happens.
//
// # Cgroups and resource limits (Linux)
//
// DetectCgroups, once per broker, makes "warrant/<scope>" in each
// hierarchy it can use (cgroup_detect_linux.go), and every action gets a
// child named by its handle in each, made with the profile's limits set
// before anything is started in it (actioncg_linux.go):
//
//   - cgroup v2, in this process's own cgroup: the launcher is started in
//     the action's child with CLONE_INTO_CGROUP; cgroup.kill ends the
//     action and cgroup.events confirms it gone. Where the memory or pids
//     controller is delegated there (cgroup.controllers lists it), the
//     broker enables it in cgroup.subtree_control down to its
//     directory, moving itself into the leaf warrant-broker first when it
//     is the only process of its cgroup (a cgroup with processes cannot
//     give controllers to children), and sets memory.max with
//     memory.swap.max 0, and pids.max.
//   - cgroup v1, for a controller that lives in its own hierarchy (hybrid
//     hosts, whose cgroup v2 has no memory or pids controller): the
//     directory is made under this process's cgroup in that hierarchy, or
//     at its root when that is not writable; the action's child gets
//     memory.limit_in_bytes and memory.memsw.limit_in_bytes (memory and
//     swap together), or pids.max. The launcher is born in them: a
//     thread of the broker, locked to its goroutine, moves itself into
//     them (0 into each tasks file), forks the launcher there and moves
//     back (inside_linux.go). The process's main thread never does: in
//     cgroup v1 the memory of the whole process is charged to the memcg
//     of its thread-group leader. A thread that cannot move back is never
//     unlocked and ends with its goroutine, so no thread of the broker
//     stays in an action's cgroups. Where the thread cannot find or open
//     its way back or get in, the launcher's pid is written into them
//     after its start instead. Either way it is in them before the broker sends its
//     request: the launcher runs nothing until it has read that request,
//     so nothing of the action runs outside them. Without cgroup v2, the end
//     is made by SIGKILL to each process listed in cgroup.procs, each
//     through a pidfd opened before its pid is seen listed a second time
//     (a reused pid is not signalled), repeated until none is listed,
//     which confirms the end.
//
// Two costs are kept off an action's path (spare_linux.go): its cgroup v1
// directories are a spare set made ahead, in the background, for the
// same limits (renamed to the handle; cgroup v2 allows no rename, so the
// v2 directory is made for the action), and its directories are removed
// in the background once it has ended. A spare holds no process, ever;
// one a dead broker left is removed by the next, as an empty leftover.
//
// An action's background work, the removal of its cgroups and the next
// warm launcher, is handed to Spec.After, which the runner calls once
// the action's end is recorded: on two cores a launcher started while an
// action ran (about 3 ms of CPU, most of it the Go runtime's start and
// its page faults) slowed that action's own end and receipt. The next
// spare v1 set is still made when an action takes one (only an action
// that makes its own cgroups), and a slot that cannot be used is
// discarded at once.
//
// A daemon keeps one launcher started ahead (Warm, warm.go), already in
// the next action's cgroups: the process start, the Go runtime's start
// and the cgroups' making are all off the action's path, and so is the
// granting of /etc's entries one by one. A slot is made for the last
// action's shape (its limits and its /etc entries with their pins) and
// named warm-<random> (slot_linux.go):
// the launcher is started in its cgroups as above (its v2 directory by
// CLONE_INTO_CGROUP, born in its v1 ones), in the background. A write of
// a pid (the launcher's into cgroup.procs) takes cgroup_threadgroup_rwsem
// for writing and waits for its RCU grace period once no move was made
// for a few milliseconds; a thread writing 0 (itself alone) into tasks
// does not: BenchmarkLaunchIntoCgroups, 20 ms after the last move,
// 1.7 ms p50 (2.7 ms p95) to make the cgroups and start a launcher born
// in them against 7.1 ms (17.5 ms) when it is moved there after its
// start. Until the launcher was born in them, a slot took that long and
// was often not ready for the next action (BenchmarkRunTruePhases/spaced,
// 6 ms before each action: one in ten found none and started its own,
// paying the wait on its path). It is sent a wire.Prepare of the shape's
// entries, which it grants into its Landlock ruleset at once, and waits
// for its request; until then it knows of no action and runs nothing.
// The request must make the same Prepare, or the launcher refuses it. The
// action that takes it renames the v1 directories to its handle (the v2
// one, which cannot be renamed, keeps the slot's name) before its origin
// is recorded and its request sent. A slot of another shape, or whose
// launcher died waiting, is discarded and the action starts its own,
// which is sent no Prepare. Recovery finds a dead broker's action by its v1
// directories' name, so a warm launcher is kept only where the broker
// has v1 directories, or none at all (warmCosts); a dead broker's
// untaken slot is ended without being called a survivor: nothing in one
// was ever sent a request.
//
// At the end the counters are read before the directories are removed:
// oom_kill (memory.events, memory.oom_control), the memory peak,
// pids.events max and pids.peak. A risen oom_kill is the kernel's
// SIGKILL at the limit, not someone else's: the error is MEMORY_LIMIT
// ("ended by the memory limit"), the outcome stays what was observed
// (signaled; exited when the root survived a killed child). The
// kernel's choice of victim is left as it is: memory.oom.group is not
// set on cgroup v2 (cgroup v1 has no such knob), so on both the OOM
// killer ends the process it picks, usually the largest, and the rest of
// the action runs on; a root that survives is reported with its own exit
// and the count of processes killed. Forks refused at pids.max are
// counted whether or not the target survived them.
//
// The rule for a missing limit: a profile is never refused because the
// host lacks a controller. The action runs, and the card, the capability
// report and the receipt say that this limit is not enforced on this
// host, why, and how to get it (Enforcement.Missing, Delegate); the
// receipt then carries no figure for it and names "none" as what
// enforced it. Refusing would make every host without delegation unable
// to run anything, while everything else the sandbox enforces still
// holds; claiming the limit would be a lie. A limit the host does offer
// must bind: the capability probe checks each one for real, and one that
// does not bind makes the host unavailable. An action whose cgroups
// cannot be made as promised is not started (known_not_executed).
//
// At start, EndLeftovers ends what a previous broker of the same state
// directory left in its action cgroups: membership in the action's
// cgroup is the proof that the processes are that action's (no process
// of an action can move itself; the policy does not reach cgroupfs).
// Without a cgroup, the proof is the action's Origin, which Spec.OnLaunch
// is told before the launcher is sent Proceed: EndOrigin ends the
// process group of a first process that still has the recorded pid,
// start time and boot (a group id is not reused while its first process
// exists, and seccomp keeps every descendant in the group), and only
// reports the members of a group whose first process is gone.
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
//     replies are read as frames. EOF between frames after Proceed proves
//     the exec; EOF inside a frame does not.
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
