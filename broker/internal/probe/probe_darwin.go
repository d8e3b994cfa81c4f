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

// probe has no battery on macOS yet: nothing about the darwin launcher's
// Seatbelt policy has been proven on a Mac, so the state stays unverified
// and every submit is refused.
func (b *Broker) probe(context.Context, Prober, ProbeBinding) *CapabilityReport {
	return &CapabilityReport{Reason: "the capability probe has no macOS battery yet: nothing has been proven on a Mac"}
}
