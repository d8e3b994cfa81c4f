// Package probe is the capability battery: the host fixtures (a scratch
// workspace, a secret outside it, listeners on loopback and unix sockets,
// a marker process, a leaked descriptor, environment canaries), one run of
// the probe program (internal/probeprog) through the broker's real
// executor with the default policy, and the judging of every check on the
// host object: every allowed effect read back, every forbidden effect
// seen to fail. Its Report is the capability state the broker gates every
// submit on (docs/architecture.md §2.5).
//
// # Decisions
//
//   - Probe actions are the broker's own: it chooses the program and
//     every argument. They skip admission, approval and leases, create no
//     lease, approval request, action row or receipt, and cannot be
//     waited for or cancelled by anyone. Their record is the report, with
//     every check's evidence.
//   - A report holds for its Binding (OS, kernel, Landlock ABI, seccomp,
//     cgroup mode, launcher, policy and probe program digests); the broker
//     reuses a stored one only when it is verified and its binding equals
//     the current one, and probes an unavailable host again at every
//     start, so that a fix (say, enabling Landlock) is seen without any
//     flag.
//   - Each resource limit the host offers is checked for real, as one
//     more of the broker's own actions under small figures of the
//     probe's (48 processes, 64 MiB) through the same launcher, cgroups
//     and lifecycle: a prober that forks past the limit must get EAGAIN
//     with pids.events counting it and pids.peak never past it, and one
//     that touches memory past the limit must be killed by the kernel
//     with oom_kill counting it (limits_linux.go). A limit the host does
//     not offer is not a failed check: Report.Limits says it is missing,
//     why and how to get it, and the host can still be verified; an
//     offered limit that does not bind is a failed check.
//   - Egress leases are checked for real, as one more of the broker's
//     own actions (egress_linux.go): the egress prober, granted one
//     local upstream of the probe's by its literal address, must fetch
//     the upstream's page through a proxy of the probe's own, with the
//     proxy's record counting that connection's bytes exactly as the
//     upstream counted them; the proxy must refuse another port, and
//     the prober's direct connects to the upstream and to that port, a
//     UDP datagram and a DNS query must fail with nothing arriving on
//     the host. A failed egress check is a failed check: the host is
//     not verified.
//   - A check whose line is missing from the target's output fails; a
//     forbidden attempt that the target reports as failed but that shows
//     on the host object fails too. There is no flag that runs
//     unconfined.
package probe
