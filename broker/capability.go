package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warrant/broker/internal/cardtext"
	"warrant/broker/internal/egress"
	"warrant/broker/internal/probe"
	"warrant/broker/internal/seam"
	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/internal/profile"
	"warrant/wire"
)

// Capability returns the broker's current capability report.
func (b *Broker) Capability() *probe.Report {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.capability
}

func (b *Broker) setCapability(r *probe.Report) {
	r.TestSeams = b.seams
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

// checkEgress is the gate for an egress grant on a verified host (on
// any other, checkCapability refuses every submit):
// SANDBOX_UNAVAILABLE unless the probe showed that this host enforces
// egress leases (probe.FeatureEgress): where it lacks what they need,
// no grant is run or given, never one that reaches nothing.
func (b *Broker) checkEgress() error {
	r := b.Capability()
	if r.State != wire.Verified {
		return nil
	}
	why, fix := r.Unoffered(probe.FeatureEgress)
	if why == "" {
		return nil
	}
	msg := "egress leases are not available on this host, so nothing with an egress grant is run or granted here: " + why
	if fix != "" {
		msg += "; " + fix
	}
	msg += "; a command without an egress grant runs here, with no network at all"
	return wire.Errorf(wire.CodeSandboxUnavailable, "%s", msg)
}

// checkApprovalEgress refuses approval m (checkEgress) when the lease it
// would grant carries an egress grant: the list m sets, else the one its
// request asked for.
func (b *Broker) checkApprovalEgress(ctx context.Context, m *wire.Approve) error {
	err := b.checkEgress()
	if err == nil || m.SetEgress && len(m.Egress) == 0 {
		return nil
	}
	if !m.SetEgress {
		v, rerr := b.j.Request(ctx, m.RequestID)
		if rerr != nil || len(v.Identity.Egress) == 0 {
			return rerr
		}
	}
	return err
}

// EnsureCapability decides the capability state: the stored report when it
// is verified and bound to this host, launcher, policy and probe program,
// else a new probe (always, when force), which is stored. It fails only
// when the journal does; a probe that cannot run is an unavailable report.
func (b *Broker) EnsureCapability(ctx context.Context, force bool) (*probe.Report, error) {
	if slices.Contains(b.seams, seam.SkipProbe) {
		r := &probe.Report{State: wire.Verified, Reason: "test binary: the probe was skipped (seam.InsecureSkipProbe)",
			Features: []probe.Feature{{Name: probe.FeatureEgress, Available: true}}}
		b.setCapability(r)
		return r, nil
	}
	p := b.prober
	if p == nil || len(b.cfg.ProbeTarget) == 0 {
		r := probe.Unverified("this broker has no executor that can be probed, or no probe program")
		b.setCapability(r)
		return r, nil
	}
	bind, err := probe.NewBinding(p, &b.admit.Base, b.cfg.ProbeTarget[0])
	if err != nil {
		r := &probe.Report{Reason: "the probe cannot start: " + err.Error()}
		r.Conclude()
		b.setCapability(r)
		return r, nil
	}
	if !force {
		stored, err := storedReport(ctx, b.j)
		if err != nil {
			return nil, err
		}
		if stored != nil && stored.State == wire.Verified && stored.Binding == bind {
			b.setCapability(stored)
			return stored, nil
		}
	}
	start := time.Now()
	r := probe.Run(ctx, p, bind, probe.Setup{Dir: filepath.Join(b.dirs.Root, "probe"), Target: b.cfg.ProbeTarget,
		Prepare: b.prepareProbe})
	r.At, r.DurationMS = b.cfg.Now().UTC(), time.Since(start).Milliseconds()
	r.CgroupDirs = p.CgroupDirs()
	r.Conclude()
	r.TestSeams = b.seams
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("save capability report: %w", err)
	}
	if err := b.j.SaveCapabilityReport(ctx, bind.Key(), r.State.String(), raw); err != nil {
		return nil, err
	}
	b.setCapability(r)
	return r, nil
}

// prepareProbe resolves the probe program as an ordinary action would be
// (admission.Resolver.ResolveProbe: the default policy, the broker's
// environment plus extraEnv, no workspace cache, its scratch workspace
// under <state>/probe) with the egress grant the probe asks for, exact
// (the egress check's: egress.Expand with no presets), and binding
// pinned, in one fingerprint, and snapshots it.
func (b *Broker) prepareProbe(s *wire.Submit, extraEnv []string, binding wire.Binding) (*runner.Launch, error) {
	granted, err := egress.Expand(s.Request.Egress, nil)
	if err != nil {
		return nil, err
	}
	res, err := b.admit.ResolveProbe(s, extraEnv, b.dirs.Root, func(id *wire.CommandIdentity) {
		id.Egress, id.Binding = granted, binding
	})
	if err != nil {
		return nil, err
	}
	l := &runner.Launch{Resolved: res}
	if err := b.snapshots(l); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// limiter is an Executor whose actions get memory and process-count
// limits from the host's cgroups (runner.Runner).
type limiter interface {
	Limits() lifecycle.Enforcement
}

// protector is an Executor that binds the protected paths read-only
// where it can (runner.Runner).
type protector interface {
	Protection() (by, why string)
}

// protectedBy is how the protected paths are guarded on this host
// (wire.ProtectedByMount or wire.ProtectedByDetect) and, for detect, why.
func (b *Broker) protectedBy() (by, why string) {
	p, ok := b.cfg.Executor.(protector)
	if !ok {
		return wire.ProtectedByDetect, "this broker's executor makes no mount namespace"
	}
	return p.Protection()
}

// protection is the card's sentence on it.
func (b *Broker) protection() string { return cardtext.Protection(b.protectedBy()) }

// resources is the card's sentence on the memory and process-count
// limits of profile p on this host: what enforces each, or that it is not
// limited, why, and how to get it. A missing limit does not refuse the
// profile (broker/lifecycle's package doc); it is said, never claimed.
func (b *Broker) resources(p wire.Profile) string {
	enf := lifecycle.Enforcement{Missing: "This broker's executor sets no cgroup."} // neither limit
	if b.limiter != nil {
		enf = b.limiter.Limits()
	}
	l := profile.Of(p)
	return enf.Sentence(p, l.Memory, l.Pids)
}
