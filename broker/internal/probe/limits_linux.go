package probe

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/internal/probeprog"
	"warrant/internal/profile"
	"warrant/wire"
)

// limitChecks checks each resource limit the host offers for real: the
// pids prober forks past the probe's process limit and must get EAGAIN,
// with pids.events counting the refusal and pids.peak never past the
// limit; the memory prober allocates past the probe's memory limit and
// must be killed by the kernel, with oom_kill counting it. Each runs as
// one of the broker's own actions, through the same launcher, cgroups
// and lifecycle as an agent's, under the probe's small figures
// (probeprog.ProbePids, ProbeMemory) in place of its profile's. A limit
// the host does not offer is not checked: the report says it is
// missing, why, and how to get it.
func limitChecks(ctx context.Context, p Prober, s Setup) ([]Check, []Limit) {
	enf := p.Limits()
	var checks []Check
	var limits []Limit
	for _, l := range []struct {
		name, who string
		by        lifecycle.Mechanism
	}{{"memory", probeprog.MemoryProber, enf.Memory}, {"pids", probeprog.PidsProber, enf.Pids}} {
		if l.by == lifecycle.Unenforced {
			limits = append(limits, Limit{Name: l.name, EnforcedBy: l.by.EnforcedBy(), Detail: enf.Missing})
			continue
		}
		c := limitCheck(ctx, p, s, l.who)
		checks = append(checks, c)
		limits = append(limits, Limit{Name: l.name, EnforcedBy: l.by.EnforcedBy(), Detail: c.Evidence})
	}
	return checks, limits
}

// limitCheck runs one prober and judges it.
func limitCheck(ctx context.Context, p Prober, s Setup, who string) Check {
	name := map[string]string{probeprog.PidsProber: probeprog.PidsLimit, probeprog.MemoryProber: probeprog.MemoryLimit}[who]
	c := Check{Name: name, From: who, Binding: Bindings[0].String(), Expected: "fails", Observed: "not attempted"}
	run, out, err := limitRun(ctx, p, s, who)
	if err != nil {
		c.Evidence = "the limit check could not run: " + err.Error()
		return c
	}
	var l *probeprog.Line
	for _, got := range probeprog.ParseLines(out) {
		if got.Who == who && got.Check == name {
			l = &got
		}
	}
	u := run.Usage
	if u == nil {
		u = &lifecycle.Usage{}
	}
	ended := fmt.Sprintf("outcome %s", run.Outcome)
	if run.Err != nil {
		ended += fmt.Sprintf(" (%s: %s)", run.Err.Code, run.Err.Message)
	}
	switch who {
	case probeprog.PidsProber:
		if l != nil {
			c.Observed = map[bool]string{true: "succeeded", false: "failed"}[l.Done]
		}
		c.Evidence = fmt.Sprintf("pids: %s; host: pids.events max %d, pids.peak %d of pids.max %d, %s, group gone %v",
			says(l), u.PidsLimitHits, u.PidsPeak, probeprog.ProbePids, ended, run.GroupGone)
		c.Pass = l != nil && !l.Done && strings.Contains(l.Detail, "errno EAGAIN") && u.PidsLimitHits > 0 &&
			u.PidsPeak <= probeprog.ProbePids && run.GroupGone
	case probeprog.MemoryProber:
		switch {
		case l != nil && l.Done:
			c.Observed = "succeeded"
		case run.Outcome == wire.Signaled:
			c.Observed = "failed"
		}
		c.Evidence = fmt.Sprintf("memory: %s; host: oom_kill %d, memory peak %d of %d bytes, %s, group gone %v",
			says(l), u.OOMKills, u.MemoryPeak, probeprog.ProbeMemory, ended, run.GroupGone)
		c.Pass = (l == nil || !l.Done) && run.Outcome == wire.Signaled && run.Signal == int(unix.SIGKILL) &&
			u.OOMKills > 0 && run.Err != nil && run.Err.Code == wire.CodeMemoryLimit && run.GroupGone
	}
	return c
}

// limitRun runs the prober who under the probe's limits.
func limitRun(ctx context.Context, p Prober, s Setup, who string) (lifecycle.Result, string, error) {
	return proberRun(ctx, p, s, who, proberSetup{launch: func(l *runner.Launch) {
		lim := profile.Of(wire.ProfileShort)
		lim.Memory, lim.Pids = probeprog.ProbeMemory, probeprog.ProbePids
		l.ProbeLimits = &lim
	}})
}
