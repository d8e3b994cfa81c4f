package probe

import (
	"context"

	"golang.org/x/sys/unix"
)

// hostFacts returns the kernel release; macOS has no seccomp, and no
// ptrace policy an action needs.
func hostFacts() (kernel, seccomp, ptrace string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	return kernel, "unavailable", ""
}

// Run has no battery on macOS yet: nothing about the darwin launcher's
// Seatbelt policy has been proven on a Mac, so the state stays unverified
// and every submit is refused.
func Run(context.Context, Prober, Binding, Setup) *Report {
	return &Report{Reason: "the capability probe has no macOS battery yet: nothing has been proven on a Mac"}
}
