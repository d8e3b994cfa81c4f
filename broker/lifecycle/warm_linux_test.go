//go:build linux

package lifecycle

import (
	"testing"

	"warrant/internal/profile"
	"warrant/wire"
)

// TestShapes: a slot is taken only by an action of its limits and of its
// /etc entries, pins included; the launcher would refuse any other
// request after its Prepare.
func TestShapes(t *testing.T) {
	pol := wire.Policy{ReadEntries: []string{"/etc/hosts", "/etc/passwd"},
		Pins: []wire.PathPin{{Path: "/etc/hosts", Dev: 1, Ino: 2}, {Path: "/etc/passwd", Dev: 1, Ino: 3}}}
	spec := func(lim profile.Limits, pol wire.Policy) *Spec {
		return &Spec{Limits: lim, Request: &wire.SpawnRequest{Policy: pol}}
	}
	short, long := profile.Of(wire.ProfileShort), profile.Of(wire.ProfileLong)
	base := shapeOf(spec(short, pol))
	if !base.is(shapeOf(spec(short, pol))) {
		t.Fatal("an action of the slot's limits and entries does not take it")
	}
	repinned := pol
	repinned.Pins = []wire.PathPin{{Path: "/etc/hosts", Dev: 1, Ino: 2}, {Path: "/etc/passwd", Dev: 1, Ino: 4}}
	fewer := pol
	fewer.ReadEntries = pol.ReadEntries[:1]
	for name, other := range map[string]shape{
		"other limits":  shapeOf(spec(long, pol)),
		"another pin":   shapeOf(spec(short, repinned)),
		"fewer entries": shapeOf(spec(short, fewer)),
		"no entries":    shapeOf(spec(short, wire.Policy{})),
	} {
		if base.is(other) {
			t.Errorf("%s: the slot would be taken", name)
		}
	}
}
