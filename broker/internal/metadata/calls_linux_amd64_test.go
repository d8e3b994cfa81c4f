package metadata

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestDescriptorOnlyCallsTakeUnsignedFDs: fchmod, fchown, fsetxattr and
// fremovexattr take an unsigned descriptor (and inotify_add_watch's
// instance is no AT_FDCWD either), so 0xffffff9c is not AT_FDCWD
// to them (the kernel answers EBADF) and must not become the caller's
// working directory here (found in review). The *at calls take a signed
// one, where it is AT_FDCWD.
func TestDescriptorOnlyCallsTakeUnsignedFDs(t *testing.T) {
	cwd := uint64(uint32(0xffffff9c))
	for _, c := range []struct {
		nr   int
		args [6]uint64
	}{
		{unix.SYS_FCHMOD, [6]uint64{cwd, 0o755}},
		{unix.SYS_FCHMOD, [6]uint64{1 << 31, 0o755}},
		{unix.SYS_FCHOWN, [6]uint64{cwd, 0, 0}},
		{unix.SYS_FSETXATTR, [6]uint64{cwd, 0, 0, 0, 0}},
		{unix.SYS_FREMOVEXATTR, [6]uint64{cwd, 0}},
		{unix.SYS_INOTIFY_ADD_WATCH, [6]uint64{cwd, 0, unix.IN_CREATE}},
	} {
		nr, args := c.nr, c.args
		cl, errno := decode(nil, &seccompData{Nr: int32(nr), Arch: unix.AUDIT_ARCH_X86_64, Args: args})
		if errno != unix.EBADF {
			t.Errorf("syscall %d on fd %#x: %+v %v, want EBADF", nr, args[0], cl, errno)
		}
	}
	cl, errno := decode(nil, &seccompData{Nr: unix.SYS_FCHMOD, Arch: unix.AUDIT_ARCH_X86_64, Args: [6]uint64{3, 0o755}})
	if errno != 0 || cl.dirfd != 3 || cl.path != nil {
		t.Errorf("fchmod(3): %+v %v", cl, errno)
	}
}
