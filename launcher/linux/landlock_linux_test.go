package linux

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestKnownABIsHandleEveryRight checks go-landlock's presets against the
// kernel's UAPI constants (x/sys/unix), ABI by ABI: a preset that forgot a
// right would leave it unhandled, that is allowed, in every action.
func TestKnownABIsHandleEveryRight(t *testing.T) {
	fsV1 := uint64(unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1) // execute … make_sym
	tcp := uint64(unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP)
	udp := uint64(unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP)
	scopes := uint64(unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL)
	for abi := 1; abi < len(knownABIs); abi++ {
		fs, net, scoped := fsV1, uint64(0), uint64(0)
		for step, right := range map[int]uint64{2: unix.LANDLOCK_ACCESS_FS_REFER, 3: unix.LANDLOCK_ACCESS_FS_TRUNCATE,
			5: unix.LANDLOCK_ACCESS_FS_IOCTL_DEV, 9: unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX} {
			if abi >= step {
				fs |= right
			}
		}
		if abi >= 4 {
			net = tcp
		}
		if abi >= 10 {
			net |= udp
		}
		if abi >= 6 {
			scoped = scopes
		}
		k := knownABIs[abi]
		if uint64(k.HandledAccessFS) != fs || uint64(k.HandledAccessNet) != net || uint64(k.Scoped) != scoped {
			t.Errorf("ABI %d: preset handles fs %#x net %#x scoped %#x, want %#x %#x %#x",
				abi, uint64(k.HandledAccessFS), uint64(k.HandledAccessNet), uint64(k.Scoped), fs, net, scoped)
		}
	}
	if len(knownABIs)-1 < 10 {
		t.Errorf("newest known ABI is %d, want at least 10", len(knownABIs)-1)
	}
}
