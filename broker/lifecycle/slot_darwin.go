package lifecycle

import "warrant/wire"

// slot is a warm launcher on macOS, which has no cgroups.
type slot struct {
	l     *launcher
	shape shape
}

func newSlot(path string, _ *Cgroups, sh shape) (*slot, error) {
	l, err := startLauncher(path, -1)
	if err != nil {
		return nil, err
	}
	return &slot{l: l, shape: sh}, nil
}

// prepared is nothing: the macOS launcher grants no /etc entries.
func prepared(*wire.SpawnRequest) []wire.PathPin { return nil }

// discard ends a slot nobody took.
func (sl *slot) discard() { sl.l.abandon() }

// warmCosts allows a warm launcher: there are no cgroups to find it by.
func warmCosts(*Cgroups) error { return nil }
