package landlockabi

import "golang.org/x/sys/unix"

// erratumSignalScope is the errata bit saying that ABI 6 signal scoping is
// fixed (erratum 2; the UAPI headers do not name it).
const erratumSignalScope = 1 << 1

// Running returns the running kernel's Landlock ABI, counting a kernel of
// ABI 6 or later without the signal-scope erratum fix as ABI 5. It is 0
// when Landlock is unsupported or disabled.
func Running() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	var errata uintptr
	if int(v) >= Scopes {
		// A failed query fixes nothing.
		if errata, _, e = unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA); e != 0 {
			errata = 0
		}
	}
	return count(int(v), errata)
}

// count is Running's rule on the kernel's two answers.
func count(version int, errata uintptr) int {
	if version >= Scopes && errata&erratumSignalScope == 0 {
		return Scopes - 1
	}
	return version
}
