package probe

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"warrant/broker/internal/identity"
	"warrant/broker/internal/policy"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/internal/landlockabi"
	"warrant/wire"
)

// Prober is an Executor that can run the broker's probe actions.
// runner.Runner implements it.
type Prober interface {
	// Probe runs l to its end through the real launch chain, synchronously,
	// writing the target's output to stdout and stderr. It records nothing
	// and leaves l to the caller.
	Probe(ctx context.Context, l *runner.Launch, stdout, stderr io.Writer) lifecycle.Result
	// LauncherDigest is the hex SHA-256 of the pinned launcher.
	LauncherDigest() string
	// Cgroups describes the cgroup directories actions run in, or "";
	// CgroupDirs lists them.
	Cgroups() string
	CgroupDirs() []string
	// Limits is what enforces each resource limit on this host, or why
	// nothing does.
	Limits() lifecycle.Enforcement
}

// Binding is what a capability report holds for: when any of it
// changes, the report no longer applies.
type Binding struct {
	OS             string `json:"os"`
	Kernel         string `json:"kernel"`
	LandlockABI    int    `json:"landlock_abi"`
	Seccomp        string `json:"seccomp"`
	Cgroup         string `json:"cgroup"`
	LauncherDigest string `json:"launcher_digest"`
	PolicyDigest   string `json:"policy_digest"` // of the action-independent default policy
	ProbeDigest    string `json:"probe_digest"`  // of the probe target program
	// Ptrace is the host's ptrace policy ("yama ptrace_scope N", or "no
	// yama"): egress leases need the broker's ptrace access to the
	// target (FeatureEgress).
	Ptrace string `json:"ptrace"`
}

// Key is the hex SHA-256 of the binding's JSON: what the journal stores
// the report under.
func (pb Binding) Key() string {
	raw, err := json.Marshal(pb)
	if err != nil {
		panic("probe: internal error: marshal probe binding: " + err.Error())
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// Check is one check of the battery.
type Check struct {
	Name     string `json:"name"`
	Binding  string `json:"binding"` // the executable binding the battery ran under
	From     string `json:"from"`    // the process that made the attempt, or "host"
	Allowed  bool   `json:"allowed"`
	Expected string `json:"expected"` // "succeeds" or "fails"
	Observed string `json:"observed"`
	Pass     bool   `json:"pass"`
	Evidence string `json:"evidence"`
}

// Report is the result of one capability probe.
type Report struct {
	State      wire.CapabilityState `json:"state"`
	Binding    Binding              `json:"binding"`
	At         time.Time            `json:"at"`
	DurationMS int64                `json:"duration_ms"`
	Reason     string               `json:"reason,omitempty"` // why not verified, in one sentence
	Failed     []string             `json:"failed,omitempty"` // "name/from" of every failed check
	Hints      []string             `json:"hints,omitempty"`  // how to fix it
	Checks     []Check              `json:"checks"`
	// Limits says, for the memory and process-count limits, what enforces
	// each on this host (proven by its check in Checks), or that nothing
	// does, why, and how to get it. A missing limit does not make the
	// host unavailable; an offered one that does not bind does.
	Limits []Limit `json:"limits,omitempty"`
	// Features says, for each feature beyond running a command whose
	// checks ran (FeatureEgress), whether the host offers it.
	Features []Feature `json:"features,omitempty"`
	// CgroupDirs are the cgroup directories Binding.Cgroup describes, as
	// they were when the report was made; `broker status` checks that
	// they are still there. Not part of the binding: Cgroup names them
	// already.
	CgroupDirs []string `json:"cgroup_dirs,omitempty"`
	// CgroupMissing lists those of CgroupDirs that the reader found gone
	// while a broker serves the state directory. Set by `broker status`
	// alone; never stored.
	CgroupMissing []string `json:"cgroup_missing,omitempty"`
	// TestSeams names the test seams in force when the report was made
	// (broker/internal/seam); empty in every production build.
	TestSeams []string `json:"test_seams,omitempty"`
}

// Limit is what the host does with one resource limit.
type Limit struct {
	Name       string `json:"name"`        // memory or pids
	EnforcedBy string `json:"enforced_by"` // cgroup_v2, cgroup_v1 or none (receipt.EnforcedBy*)
	Detail     string `json:"detail"`      // its check's evidence, or why it is missing and how to get it
}

// FeatureEgress is egress leases (issue 34): its checks are the egress
// prober's (probeprog.EgressChecks).
const FeatureEgress = "egress"

// Feature is what the host does with one feature: available when every
// one of its checks passed. Where they failed because the host lacks a
// mechanism the feature needs, which the probe saw the sandbox refuse
// by name, Unsupported says which, and the feature alone is off: its
// failed checks do not fail the host, and the broker refuses what needs
// it. Any other failure of its checks fails the host.
type Feature struct {
	Name        string   `json:"name"`
	Available   bool     `json:"available"`
	Unsupported string   `json:"unsupported,omitempty"` // what the host lacks, and how the probe saw it
	Fix         string   `json:"fix,omitempty"`         // how to get it
	Checks      []string `json:"checks"`                // its checks, as Failed names them
}

// Key names a check as Failed and Feature.Checks do: "name/from@binding".
func (c Check) Key() string { return c.Name + "/" + c.From + "@" + c.Binding }

// Unoffered says why the host does not offer feature name, in one
// sentence, and how to get it where the report knows, or "" when it
// does: when r is verified and its Features say the feature is
// available. A feature the report does not list is not offered: its
// checks never ran.
func (r *Report) Unoffered(name string) (why, fix string) {
	if r.State != wire.Verified {
		return fmt.Sprintf("the capability is %s", r.State), ""
	}
	for _, f := range r.Features {
		switch {
		case f.Name != name:
		case f.Available:
			return "", ""
		case f.Unsupported != "":
			return f.Unsupported, f.Fix
		default:
			return "its checks failed", ""
		}
	}
	return "the capability report holds no check of it (`broker probe` checks it)", ""
}

// Off is the set of checks (by Key) of the features the host does not
// support: failed, they fail nothing.
func (r *Report) Off() map[string]bool {
	off := map[string]bool{}
	for _, f := range r.Features {
		if f.Unsupported != "" {
			for _, c := range f.Checks {
				off[c] = true
			}
		}
	}
	return off
}

// Unverified is the report of a broker that has not probed.
func Unverified(reason string) *Report {
	return &Report{State: wire.Unverified, Reason: reason}
}

// Conclude sets the state from the checks: verified only when there are
// checks and every one passed, but for those of a feature the host does
// not support (Feature.Unsupported); unverified when no check could run
// (nothing was proven either way); unavailable when any other check
// failed.
func (r *Report) Conclude() {
	off := r.Off()
	r.Failed = nil
	for _, c := range r.Checks {
		if !c.Pass && !off[c.Key()] {
			r.Failed = append(r.Failed, c.Key())
		}
	}
	switch {
	case len(r.Checks) > 0 && len(r.Failed) == 0:
		r.State, r.Reason, r.Hints = wire.Verified, "", nil
		return
	case len(r.Checks) == 0:
		r.State, r.Hints = wire.Unverified, hints(r)
		return
	case r.Reason == "":
		named := r.Failed
		if len(named) > maxNamed {
			named = named[:maxNamed]
		}
		r.Reason = fmt.Sprintf("%d of %d checks failed: %s", len(r.Failed), len(r.Checks), strings.Join(named, ", "))
		if len(named) < len(r.Failed) {
			r.Reason += fmt.Sprintf(" and %d more (broker probe --json lists them)", len(r.Failed)-len(named))
		}
	}
	r.State = wire.Unavailable
	r.Hints = hints(r)
}

// maxNamed is how many failed checks a reason names: the reason travels
// in a refusal, which must fit a frame.
const maxNamed = 8

// hints turns a failed report into plain fixes.
func hints(r *Report) []string {
	var h []string
	add := func(s string) {
		if !slices.Contains(h, s) {
			h = append(h, s)
		}
	}
	switch abi := r.Binding.LandlockABI; {
	case strings.HasPrefix(r.Binding.OS, "darwin/"):
		add("macOS is not supported yet: the macOS launcher has no verified policy")
	case abi == 0:
		add("Landlock is not enabled: add landlock to the lsm= kernel parameter (e.g. lsm=landlock,lockdown,yama,integrity,apparmor,bpf) and reboot")
	case abi < policy.NetABI:
		add(fmt.Sprintf("Landlock ABI %d cannot restrict TCP: use Linux 6.7 or newer (ABI 4)", abi))
	}
	if r.Binding.Seccomp != "" && !strings.HasPrefix(r.Binding.Seccomp, "available") {
		add("seccomp filters are not available: use a kernel built with CONFIG_SECCOMP_FILTER")
	}
	for _, c := range r.Checks {
		if c.Pass {
			continue
		}
		switch c.Name {
		case "launch":
			add("the launcher did not run the probe: " + c.Evidence)
		case "write_outside", "read_secret", "symlink_escape", "read_input", "write_workspace", "run_runtime":
			add("the file policy did not hold: check that no --read-path covers the state directory, and that the launcher was built from this source")
		case "unix_abstract", "signal":
			add("Landlock scopes did not hold: abstract sockets and signals need Landlock ABI 6 (Linux 6.12)")
		case "ptrace", "userns", "tcp_connect", "udp_send", "unix_pathname":
			add("the seccomp filter did not hold: rebuild the launcher from this source (`make build`)")
		case "metadata_outside", "metadata_workspace":
			add("the target's metadata calls (chmod, chown, xattrs, times) were not answered beneath the workspace alone: the launcher must hand its seccomp listener to the broker; rebuild both from this source (`make build`)")
		case "denial_record_socket", "denial_record_metadata":
			add("the broker did not record what the sandbox refused: the launcher must hand its seccomp listener to the broker; rebuild both from this source (`make build`)")
		case "protected_write":
			add("a protected path was written through its read-only bind: the launcher's mount namespace did not hold; rebuild both from this source (`make build`)")
		case "leaked_fd":
			add("an inherited descriptor reached the target: the launcher must close every descriptor it was not given")
		case "env_canary":
			add("a secret in the broker's environment reached the target: the environment allowlist did not hold")
		case "spawn_child", "spawn_grandchild":
			add("the target could not run its children under the policy: " + c.Evidence)
		case "pids_limit", "memory_limit":
			add("the host offers a cgroup for the " + strings.TrimSuffix(c.Name, "_limit") + " limit, but it did not bind: " + c.Evidence)
		}
	}
	if len(h) == 0 {
		add("run `broker probe` to see every check and its evidence")
	}
	return h
}

// Setup is what the battery needs from the broker.
type Setup struct {
	Dir    string   // a scratch directory of the broker's own; removed and made anew
	Target []string // the probe program and its leading arguments (internal/probeprog)
	// Prepare resolves s as an ordinary action would be — identity,
	// default policy, snapshot — with the broker's environment plus
	// extraEnv ("NAME=value", the canaries), bound as b says, and returns
	// the launch without a handle or private directories.
	Prepare func(s *wire.Submit, extraEnv []string, b wire.Binding) (*runner.Launch, error)
}

// NewBinding measures what a report made now would be bound to: this host,
// p's launcher and cgroup mode, the action-independent default policy and
// the probe program.
func NewBinding(p Prober, base *wire.Policy, target string) (Binding, error) {
	kernel, seccomp, ptrace := hostFacts()
	pol, err := identity.Digest(base)
	if err != nil {
		return Binding{}, fmt.Errorf("digest the default policy: %w", err)
	}
	prog, err := identity.ProgramDigest(target)
	if err != nil {
		return Binding{}, fmt.Errorf("identify the probe program: %w", err)
	}
	cg := "none: supervision by process group"
	if d := p.Cgroups(); d != "" {
		cg = d
	}
	return Binding{OS: runtime.GOOS + "/" + runtime.GOARCH, Kernel: kernel, LandlockABI: landlockabi.Running(),
		Seccomp: seccomp, Cgroup: cg, LauncherDigest: p.LauncherDigest(), PolicyDigest: hex.EncodeToString(pol),
		ProbeDigest: hex.EncodeToString(prog), Ptrace: ptrace}, nil
}

// random returns prefix followed by 96 random bits in hex: nonces,
// secrets and canaries no target can guess.
func random(prefix string) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("probe: internal error: crypto/rand: " + err.Error())
	}
	return prefix + hex.EncodeToString(b[:])
}
