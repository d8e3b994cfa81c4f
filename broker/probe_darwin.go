package broker

import (
	"context"

	"golang.org/x/sys/unix"
)

// hostFacts returns the kernel release; macOS has no seccomp.
func hostFacts() (kernel, seccomp string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	return kernel, "unavailable"
}

// probe has no battery on macOS yet: the darwin launcher's Seatbelt policy
// is not verified, so the state is unavailable.
func (b *Broker) probe(context.Context, Prober, ProbeBinding) *CapabilityReport {
	return &CapabilityReport{Reason: "the capability probe is not built for macOS"}
}
