package broker

// The capability probe (ARCHITECTURE §2.5). Execution is offered only in
// the verified state: the broker has run a fixed battery through its own
// Executor (runner → lifecycle → the pinned launcher) with the default
// policy, and every allowed effect was read back from the host and every
// forbidden effect was seen to fail on the host object.
//
// Decisions:
//   - Probe actions are the broker's own: it chooses the program (the
//     probe target, internal/probeprog) and every argument. They skip
//     admission, approval and leases, create no lease and no approval
//     request, have no row in actions and no receipt, and cannot be
//     waited for or cancelled by anyone. Their record is the capability
//     report, with every check's evidence, in capability_reports.
//   - A stored report is reused at start only when it is verified and its
//     binding (OS, kernel, Landlock ABI, seccomp, cgroup mode, launcher,
//     policy and probe program digests) equals the current one. An
//     unavailable host is probed again at every start, so that a fix
//     (say, enabling Landlock) is seen without any flag.
//   - There is no flag that runs unconfined. A broker whose Executor
//     cannot be probed stays unverified and refuses every submit.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"warrant/wire"
)

// Prober is an Executor that can run the broker's probe actions.
// runner.Runner implements it.
type Prober interface {
	// Probe runs l to its end through the real launch chain, synchronously,
	// writing the target's output to stdout and stderr. It records nothing
	// and leaves l to the caller.
	Probe(ctx context.Context, l *Launch, stdout, stderr io.Writer) ProbeRun
	// LauncherDigest is the hex SHA-256 of the pinned launcher.
	LauncherDigest() string
	// Cgroups is the cgroup directory actions run in, or "".
	Cgroups() string
}

// ProbeRun is what the lifecycle observed of one probe action.
type ProbeRun struct {
	Outcome   wire.Outcome
	ExitCode  *int
	Err       *wire.Error
	Ready     *wire.Ready
	GroupGone bool
}

// ProbeBinding is what a capability report holds for: when any of it
// changes, the report no longer applies.
type ProbeBinding struct {
	OS             string `json:"os"`
	Kernel         string `json:"kernel"`
	LandlockABI    int    `json:"landlock_abi"`
	Seccomp        string `json:"seccomp"`
	Cgroup         string `json:"cgroup"`
	LauncherDigest string `json:"launcher_digest"`
	PolicyDigest   string `json:"policy_digest"` // of the action-independent default policy
	ProbeDigest    string `json:"probe_digest"`  // of the probe target program
}

// key is the hex SHA-256 of the binding's JSON.
func (pb ProbeBinding) key() string {
	raw, err := json.Marshal(pb)
	if err != nil {
		panic("broker: internal error: marshal probe binding: " + err.Error())
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// ProbeCheck is one check of the battery.
type ProbeCheck struct {
	Name     string `json:"name"`
	From     string `json:"from"` // the process that made the attempt, or "host"
	Allowed  bool   `json:"allowed"`
	Expected string `json:"expected"` // "succeeds" or "fails"
	Observed string `json:"observed"`
	Pass     bool   `json:"pass"`
	Evidence string `json:"evidence"`
}

// CapabilityReport is the result of one capability probe.
type CapabilityReport struct {
	State      wire.CapabilityState `json:"state"`
	Binding    ProbeBinding         `json:"binding"`
	At         time.Time            `json:"at"`
	DurationMS int64                `json:"duration_ms"`
	Reason     string               `json:"reason,omitempty"` // why not verified, in one sentence
	Failed     []string             `json:"failed,omitempty"` // "name/from" of every failed check
	Hints      []string             `json:"hints,omitempty"`  // how to fix it
	Checks     []ProbeCheck         `json:"checks"`
}

// unverified is the report of a broker that has not probed.
func unverified(reason string) *CapabilityReport {
	return &CapabilityReport{State: wire.Unverified, Reason: reason}
}

// conclude sets the state from the checks: verified only when there are
// checks and every one passed; unverified when no check could run
// (nothing was proven either way); unavailable when any check failed.
func (r *CapabilityReport) conclude() {
	r.Failed = nil
	for _, c := range r.Checks {
		if !c.Pass {
			r.Failed = append(r.Failed, c.Name+"/"+c.From)
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
		r.Reason = fmt.Sprintf("%d of %d checks failed: %s", len(r.Failed), len(r.Checks), strings.Join(r.Failed, ", "))
	}
	r.State = wire.Unavailable
	r.Hints = hints(r)
}

// Capability returns the broker's current capability report.
func (b *Broker) Capability() *CapabilityReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.capability
}

func (b *Broker) setCapability(r *CapabilityReport) {
	b.mu.Lock()
	b.capability = r
	b.mu.Unlock()
}

// checkCapability is the submit gate: SANDBOX_UNAVAILABLE unless verified.
func (b *Broker) checkCapability() error {
	r := b.Capability()
	if r.State == wire.Verified {
		return nil
	}
	msg := fmt.Sprintf("this host has not been shown to enforce the sandbox (capability %s): %s", r.State, r.Reason)
	if len(r.Hints) > 0 {
		msg += "; " + strings.Join(r.Hints, "; ")
	}
	return wire.Errorf(wire.CodeSandboxUnavailable, "%s", msg)
}

// EnsureCapability decides the capability state: the stored report when it
// is verified and bound to this host, launcher, policy and probe program,
// else a new probe (always, when force), which is stored. It fails only
// when the journal does; a probe that cannot run is an unavailable report.
func (b *Broker) EnsureCapability(ctx context.Context, force bool) (*CapabilityReport, error) {
	if b.cfg.InsecureSkipProbeForTests {
		if !testing.Testing() {
			panic("broker: internal error: InsecureSkipProbeForTests outside a test binary")
		}
		r := &CapabilityReport{State: wire.Verified, Reason: "test binary: the probe was skipped (InsecureSkipProbeForTests)"}
		b.setCapability(r)
		return r, nil
	}
	p := b.prober
	if p == nil || len(b.cfg.ProbeTarget) == 0 {
		r := unverified("this broker has no executor that can be probed, or no probe program")
		b.setCapability(r)
		return r, nil
	}
	bind, err := b.probeBinding(p)
	if err != nil {
		r := &CapabilityReport{Reason: "the probe cannot start: " + err.Error()}
		r.conclude()
		b.setCapability(r)
		return r, nil
	}
	if !force {
		stored, err := b.j.LatestCapabilityReport(ctx)
		if err != nil {
			return nil, err
		}
		if stored != nil && stored.State == wire.Verified && stored.Binding == bind {
			b.setCapability(stored)
			return stored, nil
		}
	}
	start := time.Now()
	r := b.probe(ctx, p, bind)
	r.At, r.DurationMS = b.cfg.Now().UTC(), time.Since(start).Milliseconds()
	r.conclude()
	if err := b.j.SaveCapabilityReport(ctx, r); err != nil {
		return nil, err
	}
	b.setCapability(r)
	return r, nil
}

// probeBinding measures what the report will be bound to.
func (b *Broker) probeBinding(p Prober) (ProbeBinding, error) {
	kernel, seccomp := hostFacts()
	pol, err := digest(&b.base)
	if err != nil {
		return ProbeBinding{}, fmt.Errorf("digest the default policy: %w", err)
	}
	exe, _, err := identify(b.cfg.ProbeTarget[0])
	if err != nil {
		return ProbeBinding{}, fmt.Errorf("identify the probe program: %w", err)
	}
	exe.f.Close()
	cg := "none: supervision by process group"
	if d := p.Cgroups(); d != "" {
		cg = "v2 delegated: " + d
	}
	return ProbeBinding{OS: runtime.GOOS + "/" + runtime.GOARCH, Kernel: kernel, LandlockABI: kernelLandlockABI(),
		Seccomp: seccomp, Cgroup: cg, LauncherDigest: p.LauncherDigest(), PolicyDigest: hex.EncodeToString(pol),
		ProbeDigest: hex.EncodeToString(exe.id.SHA256)}, nil
}

// hints turns a failed report into plain fixes.
func hints(r *CapabilityReport) []string {
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
	case abi < landlockNetABI:
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
		case "leaked_fd":
			add("an inherited descriptor reached the target: the launcher must close every descriptor it was not given")
		case "env_canary":
			add("a secret in the broker's environment reached the target: the environment allowlist did not hold")
		case "spawn_child", "spawn_grandchild":
			add("the target could not run its children under the policy: " + c.Evidence)
		}
	}
	if len(h) == 0 {
		add("run `broker probe` to see every check and its evidence")
	}
	return h
}
