// Package probeprog is the target program of the capability probe
// (docs/architecture.md §2.5): the fixed battery the broker runs through the real
// broker → launcher chain before it offers execution.
//
// The broker binary carries it: `broker probe` with Arg as its first
// argument runs Main instead of the command, so no separate program has
// to be installed, and the probe exercises the same binary the operator
// runs. The broker chooses the program and every argument; no agent can
// request it.
//
// # What the target does
//
// The target reads the bound input, writes a file in the workspace, runs
// a trusted runtime binary from the read-only runtime paths, then spawns a
// child which spawns a grandchild. The target and the grandchild each
// attempt every forbidden effect of the plan (write, read and symlink
// escapes, TCP, UDP, pathname and abstract unix sockets, a signal, a
// leaked descriptor, an environment canary, a user namespace and ptrace).
// Each attempt prints one line, "WHO CHECK done|failed DETAIL".
//
// Two more programs serve the limit checks, each run as its own action:
// the pids prober forks (a raw clone whose child only waits, so the Go
// runtime never needs a thread at the limit) until a fork fails, and the
// memory prober touches memory a mebibyte at a time past the probe's
// memory limit. Each prints one line if it gets past its limit.
//
// One more serves the egress checks (egress.go), as an action whose
// egress grant is one local upstream of the broker's: it fetches a page
// of the upstream through the broker's proxy, then tries the proxy for
// another port, a connect to the upstream and to another port, a UDP
// datagram and a DNS query. Each prints its line.
//
// # Threat model
//
// The lines are only what the target saw. The broker never trusts them
// alone: every effect with a host object is judged on that object (the
// file, the listener, the marker process), and a missing or malformed
// line counts as a failed check, so a target that prints nothing, or lies
// that an attempt failed, cannot make the probe pass.
package probeprog
