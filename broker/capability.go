package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"warrant/broker/internal/identity"
	"warrant/broker/internal/policy"
	"warrant/broker/internal/probe"
	"warrant/broker/internal/seam"
	"warrant/broker/runner"
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

// EnsureCapability decides the capability state: the stored report when it
// is verified and bound to this host, launcher, policy and probe program,
// else a new probe (always, when force), which is stored. It fails only
// when the journal does; a probe that cannot run is an unavailable report.
func (b *Broker) EnsureCapability(ctx context.Context, force bool) (*probe.Report, error) {
	if slices.Contains(b.seams, seam.SkipProbe) {
		r := &probe.Report{State: wire.Verified, Reason: "test binary: the probe was skipped (seam.InsecureSkipProbe)"}
		b.setCapability(r)
		return r, nil
	}
	p := b.prober
	if p == nil || len(b.cfg.ProbeTarget) == 0 {
		r := probe.Unverified("this broker has no executor that can be probed, or no probe program")
		b.setCapability(r)
		return r, nil
	}
	bind, err := probe.NewBinding(p, &b.base, b.cfg.ProbeTarget[0])
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
	r := probe.Run(ctx, p, bind, probe.Setup{Dir: filepath.Join(b.dirs.root, "probe"), Target: b.cfg.ProbeTarget,
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

// prepareProbe resolves the probe program as an ordinary action would be,
// with the default policy and an environment built from the broker's plus
// extraEnv (and the declared variables), and snapshots it. It gets no
// workspace cache: its scratch workspace is new at every probe. Its workspace is the scratch directory
// probe.Run makes under <state>/probe: inside the state directory by
// design, so that one place — the state directory's root — is left out of
// its workspace check (identity.Protected.Without); every other place,
// keys/, run/ and actions/ among them, is checked as for any action.
func (b *Broker) prepareProbe(s *wire.Submit, extraEnv []string, binding wire.Binding) (*runner.Launch, error) {
	env := actionEnv(append(append([]string{}, b.cfg.Environ...), extraEnv...), b.declared)
	res, err := identity.Resolve(s, b.protected.Without(b.dirs.root), func(ws wire.DirIdentity, exe wire.Executable) ([]wire.EnvVar, wire.Policy, error) {
		pol, err := policy.For(b.base, b.withheld, ws.Path, exe)
		return env, pol, err
	})
	if err != nil {
		return nil, err
	}
	if res.Identity().Binding != binding {
		id, fp, err := res.Rebind(binding)
		if err != nil {
			res.Close()
			return nil, err
		}
		res = res.WithIdentity(id, fp)
	}
	l := &runner.Launch{Resolved: res}
	if err := b.snapshots(l); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
