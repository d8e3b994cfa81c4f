package profile

import (
	"strings"
	"testing"

	"warrant/wire"
)

// Every profile wire can decode has a full bundle here, so Of cannot
// panic on a decoded request; a profile added to wire without limits
// fails this test, not an action.
func TestEveryWireProfileHasLimits(t *testing.T) {
	n := 0
	for p := wire.Profile(1); !strings.HasPrefix(p.String(), "invalid("); p++ {
		l := Of(p)
		if l.Wall <= 0 || l.CPUSeconds == 0 || l.Retain <= 0 || l.HardOutput < 2*l.Retain || l.FileSize == 0 ||
			l.Memory < 1<<30 || l.Pids < 64 {
			t.Errorf("%s: incomplete limits %+v", p, l)
		}
		n++
	}
	if n != len(table)-1 {
		t.Errorf("wire has %d profiles, the table %d", n, len(table)-1)
	}
}

func TestOfPanicsOnInvalid(t *testing.T) {
	for _, p := range []wire.Profile{0, wire.Profile(len(table)), 255} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("Of(%d) returned instead of panicking", p)
				}
			}()
			Of(p)
		}()
	}
}

// Longer names, in order, the profiles with more wall time than each.
func TestLonger(t *testing.T) {
	for p, want := range map[wire.Profile]string{
		wire.ProfileShort:    "standard (2m0s), long (30m0s)",
		wire.ProfileStandard: "long (30m0s)",
		wire.ProfileLong:     "",
	} {
		if got := Longer(p); got != want {
			t.Errorf("Longer(%s) = %q, want %q", p, got, want)
		}
	}
}
