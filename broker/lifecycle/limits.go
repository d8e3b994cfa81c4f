package lifecycle

import (
	"fmt"

	"warrant/receipt"
	"warrant/wire"
)

// Mechanism is what applies the memory or the process-count limit of an
// action: a controller in the broker's cgroups, or nothing.
type Mechanism uint8

// The mechanisms.
const (
	Unenforced Mechanism = iota // the host gives this broker no writable controller
	CgroupV2                    // the controller, enabled in the broker's delegated cgroup v2 subtree
	CgroupV1                    // the controller's own cgroup v1 hierarchy (hybrid and legacy hosts)
)

// EnforcedBy is the receipt's name of m.
func (m Mechanism) EnforcedBy() string {
	switch m {
	case CgroupV2:
		return receipt.EnforcedByCgroupV2
	case CgroupV1:
		return receipt.EnforcedByCgroupV1
	case Unenforced:
		return receipt.EnforcedByNone
	}
	panic(fmt.Sprintf("lifecycle: internal error: mechanism %d", m))
}

func (m Mechanism) String() string {
	switch m {
	case CgroupV2:
		return "cgroup v2"
	case CgroupV1:
		return "cgroup v1"
	}
	return "nothing"
}

// Enforcement is how this host applies the profiles' memory and
// process-count limits: the same for every action of one broker.
type Enforcement struct {
	Memory, Pids Mechanism
	// Swap says that swap is bounded with memory (the swap knob exists,
	// or the host has no swap).
	Swap bool
	// Missing says, when a limit is not enforced, why and how to get it;
	// "" when both are.
	Missing string
}

// Delegate is how to give the broker the controllers on a systemd host.
const Delegate = "systemd-run --user --scope -p Delegate=yes broker serve (or Delegate=yes in a user unit)"

// Sentence is the card's line for profile p on this host: each limit with
// what enforces it, or that it is not limited, why, and how to get it.
// The short card shows its first sentence in a few words
// (broker/internal/cardtext's Brief, whose test renders every form here).
func (e Enforcement) Sentence(p wire.Profile, memory, pids uint64) string {
	var s string
	swap := "with swap"
	if !e.Swap {
		swap = "swap NOT bounded"
	}
	switch {
	case e.Memory != Unenforced && e.Pids != Unenforced:
		s = fmt.Sprintf("Memory %s (%s) by %s, at most %d processes and threads by %s (profile %s).",
			gibs(memory), swap, e.Memory, pids, e.Pids, p)
	case e.Memory != Unenforced:
		s = fmt.Sprintf("Memory %s (%s) by %s (profile %s); the number of processes is NOT limited on this host.",
			gibs(memory), swap, e.Memory, p)
	case e.Pids != Unenforced:
		s = fmt.Sprintf("At most %d processes and threads by %s (profile %s); memory is NOT limited on this host.", pids, e.Pids, p)
	default:
		s = "Memory and the number of processes are NOT limited on this host."
	}
	if e.Missing != "" {
		s += " " + e.Missing
	}
	return s
}

func gibs(n uint64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// Usage is what an action's cgroups counted, read once its group was
// gone (or given up on). A counter of a limit that was not enforced is 0.
type Usage struct {
	OOMKills      uint64 // processes the kernel killed at the memory limit (oom_kill)
	MemoryPeak    uint64 // bytes at most (memory.peak, memory.max_usage_in_bytes)
	PidsLimitHits uint64 // forks refused at the limit (pids.events max)
	PidsPeak      uint64 // tasks at most (pids.peak); 0 where the kernel keeps none
}

// memoryEnding says that the memory limit ended the action, or killed a
// process of it, when the oom_kill counter rose: a SIGKILL the kernel
// sent at the limit is not one anybody else sent. Outcomes the broker
// decided itself (timeout, cancel, output) keep their own code.
func memoryEnding(r *Result, limit uint64) {
	if r.Usage == nil || r.Usage.OOMKills == 0 {
		return
	}
	switch r.Outcome {
	case wire.Signaled:
		r.Err = wire.Errorf(wire.CodeMemoryLimit, "the action was ended by the memory limit (%s): the kernel killed %d of its process(es) at the limit",
			gibs(limit), r.Usage.OOMKills)
	case wire.Exited:
		r.Err = wire.Errorf(wire.CodeMemoryLimit, "the memory limit (%s) killed %d process(es) of the action; its root exited with code %d",
			gibs(limit), r.Usage.OOMKills, *r.ExitCode)
	}
}
