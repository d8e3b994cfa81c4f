package broker

import "golang.org/x/sys/unix"

// kernelLandlockABI returns the running kernel's Landlock ABI version, or
// 0 when Landlock is unsupported or disabled.
func kernelLandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}
