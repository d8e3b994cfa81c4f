//go:build linux

package lifecycle

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/internal/ahead"
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

// TestTakeDiscardsASlotThatSpoke: a slot of the action's shape whose
// launcher still waits is taken; one whose launcher has sent something
// (a Refused of its Prepare) before its exit is seen is discarded, its
// process killed, and so is one of another shape.
func TestTakeDiscardsASlotThatSpoke(t *testing.T) {
	sh := shape{lim: profile.Of(wire.ProfileShort)}
	action := func(p wire.Profile) *Spec { return &Spec{Limits: profile.Of(p), Request: &wire.SpawnRequest{}} }
	for _, c := range []struct {
		name  string
		spoke bool
		take  *Spec
		want  bool
	}{{"quiet", false, action(wire.ProfileShort), true}, {"spoke", true, action(wire.ProfileShort), false},
		{"other shape", false, action(wire.ProfileLong), false}} {
		t.Run(c.name, func(t *testing.T) {
			sl, theirs := waitingSlot(t, sh)
			if c.spoke {
				if err := unix.Sendmsg(theirs, []byte("refused"), nil, nil, 0); err != nil {
					t.Fatal(err)
				}
			}
			w := &Warm{next: sh}
			w.one = ahead.New(func() (*slot, error) { return sl, nil }, (*slot).discard)
			w.one.Refill()
			w.one.Wait()
			got := w.take(c.take)
			w.one.Wait()
			if (got != nil) != c.want {
				t.Fatalf("take returned %v, want a slot: %v", got, c.want)
			}
			if got != nil {
				got.discard()
			} else if !sl.l.h.hasExited() {
				t.Fatal("the slot not taken was not discarded: its process still runs")
			}
		})
	}
}

// waitingSlot is a slot of sh whose launcher is a process that waits,
// with the other end of its request socket, which the test keeps.
func waitingSlot(t *testing.T, sh shape) (*slot, int) {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(pair[1]) })
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(pidfd) })
	l := &launcher{pid: cmd.Process.Pid, h: handle{pidfd}, exited: make(chan struct{}), req: os.NewFile(uintptr(pair[0]), "request")}
	return &slot{l: l, shape: sh}, pair[1]
}
