//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"warrant/wire"
)

// seesThenLeaves writes to $1 what the action finds in its HOME and
// TMPDIR (each entry's path and mode, and the go command's telemetry
// mode), then leaves files of its own there: a file, a mode-0 directory
// holding one, and another telemetry mode.
const seesThenLeaves = `set -e
{ cd "$HOME" && find . -mindepth 1 -printf 'home/%P %m\n'
  cd "$TMPDIR" && find . -mindepth 1 -printf 'tmp/%P %m\n'
} | LC_ALL=C sort > "$1"
echo "mode: $(cat "$HOME/.config/go/telemetry/mode")" >> "$1"
for d in "$HOME" "$TMPDIR"; do
  echo left > "$d/left-by"; mkdir "$d/sub"; echo left > "$d/sub/f"; chmod 0 "$d/sub"
done
echo local > "$HOME/.config/go/telemetry/mode"
`

// freshSet is what seesThenLeaves finds in a new set: the telemetry
// mode's directories and file, off, and an empty tmp; and .gitconfig,
// with the approved git identity, when the host has one (gitconfigLine).
const freshSet = `home/.config 700
home/.config/go 700
home/.config/go/telemetry 700
home/.config/go/telemetry/mode 600
mode: off
`

const gitconfigLine = "home/.gitconfig 600\n"

// TestBrokerActionDirsAfterKill: actions
// back to back on a daemon, each leaving files in its HOME and TMPDIR,
// and one more after the daemon was SIGKILLed between runs and started
// again on its state directory: every action finds a new set, never a
// previous action's files. The entries the dead daemon left in
// <state>/actions (its spares, any ended set not yet deleted) are all
// removed by the next one, which holds only its own spares there, and
// once it stops (SIGTERM) the directory is empty (read back from the
// host).
func TestBrokerActionDirsAfterKill(t *testing.T) {
	d1 := startBroker(t, "")
	a := d1.newAgent(t)
	seen := filepath.Join(a.WS, "seen")
	req := a.request(wire.ProfileShort, "/bin/sh", "-c", seesThenLeaves, "sh", seen)
	check := func(i int, h string, res *wire.Result) {
		t.Helper()
		if res.Outcome != wire.Exited || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("action %d (%s): %s %v %+v", i, h, res.Outcome, res.ExitCode, res.Error)
		}
		b, err := os.ReadFile(seen)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Replace(string(b), gitconfigLine, "", 1); got != freshSet {
			t.Fatalf("action %d (%s) found in its HOME and TMPDIR\n%s\nwant a new set's\n%s", i, h, b, freshSet)
		}
		os.Remove(seen)
	}
	const runs = 4
	h := a.Start(req, runs+1)
	check(0, h, a.End(h))
	for i := 1; i < runs; i++ {
		s, err := a.cl.Submit(a.WS, req)
		if err != nil || s.Handle == "" {
			t.Fatalf("submit %d: %+v %v", i, s, err)
		}
		check(i, s.Handle, a.End(s.Handle))
	}

	d1.kill()
	actions := filepath.Join(d1.State, "actions")
	left := entries(t, actions)
	if len(left) == 0 {
		t.Fatalf("the killed daemon left nothing in %s: the restart below would remove nothing", actions)
	}
	if slices.ContainsFunc(left, func(n string) bool { return strings.HasPrefix(n, "a-") }) {
		t.Fatalf("an ended action's directories are still named after it: %v", left)
	}

	d2 := startBroker(t, d1.State)
	a2 := &agent{t: t, d: d2, cl: d2.dial(), WS: a.WS}
	waitFor(t, "removal of what the killed daemon left", func() bool {
		now := entries(t, actions)
		return !slices.ContainsFunc(left, func(n string) bool { return slices.Contains(now, n) }) &&
			!slices.ContainsFunc(now, func(n string) bool { return strings.HasPrefix(n, "trash-") })
	})
	if now := entries(t, actions); slices.ContainsFunc(now, func(n string) bool { return !strings.HasPrefix(n, "spare-") }) {
		t.Fatalf("after the restart %s holds %v, want only the new daemon's spares", actions, now)
	}
	s, err := a2.cl.Submit(a.WS, req)
	if err != nil || s.Handle == "" {
		t.Fatalf("submit after the restart: %+v %v", s, err)
	}
	check(runs, s.Handle, a2.End(s.Handle))

	d2.cmd.Process.Signal(syscall.SIGTERM)
	<-d2.done
	if now := entries(t, actions); len(now) != 0 {
		t.Fatalf("after the restarted daemon stopped, %s holds %v", actions, now)
	}
}
