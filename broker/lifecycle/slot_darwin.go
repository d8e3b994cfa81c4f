package lifecycle

import "warrant/internal/profile"

// slot is a warm launcher on macOS, which has no cgroups.
type slot struct {
	l   *launcher
	lim profile.Limits
}

func newSlot(path string, _ *Cgroups, lim profile.Limits) (*slot, error) {
	l, err := startLauncher(path, -1)
	if err != nil {
		return nil, err
	}
	return &slot{l: l, lim: lim}, nil
}

// discard ends a slot nobody took.
func (sl *slot) discard() { sl.l.abandon() }

// warmCosts allows a warm launcher: there are no cgroups to find it by.
func warmCosts(*Cgroups) error { return nil }
