package broker

import (
	"warrant/broker/internal/policy"
	"warrant/broker/lifecycle"
	"warrant/internal/profile"
	"warrant/wire"
)

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
func (b *Broker) protection() string { return policy.Protection(b.protectedBy()) }

// resources is the card's sentence on the memory and process-count
// limits of profile p on this host: what enforces each, or that it is not
// limited, why, and how to get it. A missing limit does not refuse the
// profile (broker/lifecycle's package doc); it is said, never claimed.
func (b *Broker) resources(p wire.Profile) string {
	if b.limiter == nil {
		return "Memory and the number of processes are NOT limited: this broker's executor sets no cgroup."
	}
	l := profile.Of(p)
	return b.limiter.Limits().Sentence(p, l.Memory, l.Pids)
}
