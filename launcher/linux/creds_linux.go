package linux

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"warrant/internal/personality"
	"warrant/internal/profile"
	"warrant/wire"
)

// Securebits (linux/securebits.h): uid 0 gets no capabilities from execve,
// ambient capabilities cannot be raised, and both stay so.
const (
	secNoRoot           = 1 << 0
	secNoRootLocked     = 1 << 1
	secKeepCapsLocked   = 1 << 5
	secNoAmbient        = 1 << 6
	secNoAmbientLocked  = 1 << 7
	secureBits          = secNoRoot | secNoRootLocked | secKeepCapsLocked | secNoAmbient | secNoAmbientLocked
	capabilityWords     = 2
	maxCapabilityNumber = 63
)

// dropPrivileges performs step 8: a new session, every rlimit set from the
// profile, personality PER_LINUX, no capability in any set.
func dropPrivileges(p wire.Profile) error {
	if _, err := unix.Setsid(); err != nil {
		if sid, _ := unix.Getsid(0); err != unix.EPERM || sid != unix.Getpid() {
			return wire.Errorf(wire.CodeSandboxUnavailable, "setsid: %v", err)
		}
	}
	if err := setRlimits(profile.Of(p)); err != nil {
		return err
	}
	if _, _, e := unix.RawSyscall(unix.SYS_PERSONALITY, personality.Linux, 0, 0); e != 0 {
		return wire.Errorf(wire.CodeSandboxUnavailable, "personality: %v", e)
	}
	if got, _, _ := unix.RawSyscall(unix.SYS_PERSONALITY, personality.Query, 0, 0); got != personality.Linux {
		return wire.Errorf(wire.CodeSandboxUnavailable, "personality is %#x after setting PER_LINUX", got)
	}
	return dropCapabilities()
}

// setRlimits sets soft = hard for every limit warrant decides; the others
// keep the values the broker's own limits imply.
func setRlimits(l profile.Limits) error {
	limits := []struct {
		res int
		val uint64
	}{
		{unix.RLIMIT_CPU, l.CPUSeconds},
		{unix.RLIMIT_FSIZE, l.FileSize},
		{unix.RLIMIT_NOFILE, profile.OpenFiles},
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_MSGQUEUE, 0},
		{unix.RLIMIT_NICE, 0},
		{unix.RLIMIT_RTPRIO, 0},
		{unix.RLIMIT_RTTIME, 0},
	}
	for _, lim := range limits {
		rl := unix.Rlimit{Cur: lim.val, Max: lim.val}
		if err := unix.Setrlimit(lim.res, &rl); err != nil {
			return wire.Errorf(wire.CodeSandboxUnavailable, "setrlimit %d: %v", lim.res, err)
		}
	}
	return nil
}

// dropCapabilities empties the ambient, inheritable, permitted and
// effective sets and checks them, and with CAP_SETPCAP the bounding set.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [capabilityWords]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "capget: %v", err)
	}
	if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SETPCAP, 0, 0, 0); (err != nil || in != 0) && data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		return wire.Errorf(wire.CodeSandboxUnavailable, "the bounding set was refilled after step 1 (a new user namespace?)")
	}
	if data[0].Permitted|data[1].Permitted != 0 || unix.Geteuid() == 0 {
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, secureBits, 0, 0, 0); err != nil {
			return wire.Errorf(wire.CodeSandboxUnavailable, "set securebits: %v", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "clear ambient capabilities: %v", err)
	}
	data = [capabilityWords]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "capset: %v", err)
	}
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "capget: %v", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return wire.Errorf(wire.CodeSandboxUnavailable, "capabilities remain after capset")
		}
	}
	return nil
}

// dropBoundingSet empties the bounding set at step 1, while a warm launcher
// waits: it limits only what an exec gains, and none comes before step 12.
// Without CAP_SETPCAP (an ordinary user's launcher outside a user
// namespace) it stays full, which grants nothing: step 8 empties every
// other set, and under no_new_privs no exec can add to them.
func dropBoundingSet() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [capabilityWords]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "capget: %v", err)
	}
	for c := 0; data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 && c <= maxCapabilityNumber; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EINVAL {
			break // past the kernel's last capability
		}
		if err != nil {
			return wire.Errorf(wire.CodeSandboxUnavailable, "drop capability %d from the bounding set: %v", c, err)
		}
	}
	return nil
}

// seen is the identity want as the kernel shows it to this launcher. In
// the user namespace an unprivileged broker starts it in, only the
// broker's own uid is mapped, and a file of any other owner reads as the
// overflow uid; nothing else of the identity differs.
func seen(want wire.FileIdentity) wire.FileIdentity {
	self := uint32(unix.Getuid())
	if want.UID == self {
		return want
	}
	m, err := readSmall("/proc/self/uid_map")
	if f := strings.Fields(m); err == nil && len(f) == 3 && f[0] == f[1] && f[0] == strconv.Itoa(int(self)) && f[2] == "1" {
		o, err := readSmall("/proc/sys/kernel/overflowuid")
		if n, perr := strconv.ParseUint(strings.TrimSpace(o), 10, 32); err == nil && perr == nil {
			want.UID = uint32(n)
		}
	}
	return want
}

// readSmall returns the first 128 bytes of a /proc file.
func readSmall(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var b [128]byte
	n, err := unix.Read(fd, b[:])
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}
