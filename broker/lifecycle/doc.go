// Package lifecycle launches one approved action through the launcher and
// supervises it until its whole process group is confirmed gone, or until
// it must admit that it cannot confirm that (ARCHITECTURE §2.6).
//
// # What it guarantees
//
//   - The outcome is decided from facts observed here: the launcher's reply
//     (Refused, Ready then EOF, ExecFailed), waitid/wait4 status of the root
//     process, and the group-gone evidence. Never from the target's output.
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
//     pidfd, not reaped) until every other member is confirmed gone.
//   - "Gone" means cgroup.events says "populated 0" when the action has a
//     cgroup, and in every case that a /proc scan finds no process in the
//     group but the root zombie. If that cannot be confirmed within
//     confirmBound, the outcome is unknown: never a tidy success.
//   - Output is drained to EOF with a deadline; memory is bounded by the
//     sinks, not by what the target prints.
//
// The broker must call BecomeSubreaper once at start, so that descendants
// orphaned inside an action are re-parented to it and can be reaped here.
//
// On macOS this package refuses to launch (SANDBOX_UNAVAILABLE): the darwin
// lifecycle is not built yet.
package lifecycle
