package landlockabi

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		version int
		errata  uintptr
		want    int
	}{
		{0, 0, 0},
		{4, 0, 4},
		{5, 0, 5},
		{6, 0, 5},                  // the erratum fix is absent
		{6, 1 << 0, 5},             // another erratum's fix is not this one
		{6, erratumSignalScope, 6}, // fixed
		{9, erratumSignalScope | 1<<0 | 1<<2, 9},
		{9, 1 << 2, 5},
	} {
		if got := count(c.version, c.errata); got != c.want {
			t.Errorf("count(%d, %#x) = %d, want %d", c.version, c.errata, got, c.want)
		}
	}
}

// Running agrees with the kernel's own answers, and the floor of a kernel
// at or above TCP is one the launcher, counting the same way, meets.
func TestRunningMatchesTheKernel(t *testing.T) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	got := Running()
	if e != 0 {
		if got != 0 {
			t.Fatalf("Running() = %d where the kernel answers %v", got, e)
		}
		t.Skipf("skip: Landlock is unavailable here (%v)", e)
	}
	errata, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_ERRATA)
	if e != 0 {
		errata = 0
	}
	if want := count(int(v), errata); got != want {
		t.Fatalf("Running() = %d, want %d (version %d, errata %#x)", got, want, v, errata)
	}
	if got >= TCP && int(Floor(got)) > got {
		t.Fatalf("Floor(%d) = %d: the launcher would refuse every action on this kernel", got, Floor(got))
	}
	t.Logf("kernel version %d, errata %#x, counted %d, floor %d", v, errata, got, Floor(got))
}
