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
//     the host.
//   - Egress is a capability of its own (Report.Features, FeatureEgress):
//     a host can run commands without being able to run them with a
//     network. The broker connects the target's socket to the proxy
//     itself, which needs a thread pidfd (Linux 6.9) and pidfd_getfd,
//     which needs ptrace access to the target (refused by Yama's
//     ptrace_scope 3, or 2 without CAP_SYS_PTRACE, or an LSM). Where the
//     egress checks fail only because the prober never reached the
//     proxy, and the run's record holds the broker's refusal of that
//     connect by the rule that names the lack (kernel-unsupported,
//     caller-unreadable), egress is unsupported: the report says why
//     and how to fix it, its checks do not fail the host, and the broker
//     refuses with SANDBOX_UNAVAILABLE every submit, lease and approval
//     that carries an egress grant, before anything is asked, granted
//     or consumed: never a run whose grant silently reaches nothing. A
//     leak is not a missing feature: if anything got past the proxy (a
//     direct connect, the other port, a datagram, a DNS query; or the
//     probe cannot tell: a missing line), or the proxy connected, or the
//     record names no lack, the egress checks fail the host, as any
//     failed check does. A verified report offers egress only where it
//     lists it available; the ptrace policy is part of the Binding, so
//     a change to it is probed anew at the next start.
//   - A check whose line is missing from the target's output fails; a
//     forbidden attempt that the target reports as failed but that shows
//     on the host object fails too. There is no flag that runs
//     unconfined.
package probe
