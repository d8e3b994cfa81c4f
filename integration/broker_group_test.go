//go:build linux

package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// Each target below is a real program that tries to outlive its action.
// It carries a random marker in its command line (python: an argument;
// sh: an exported variable, inherited across exec), so a /proc scan can
// find any member the broker missed. Every test ends with the broker's
// own evidence (group_gone, the receipt's groupGone) and that scan.

const ignoreTerm = `
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
c = os.fork()
if c == 0:
    while True: time.sleep(1)
print("child", c, flush=True)
while True: time.sleep(1)
`

const stopSelf = `
import os, signal, sys, time
c = os.fork()
if c == 0:
    while True: time.sleep(1)
print("child", c, flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
print("continued", flush=True)
while True: time.sleep(1)
`

// escapee double-forks; the grandchild tries setsid (seccomp must refuse
// it), reports through a pipe so the root exits only after the attempt,
// and lingers.
const escapee = `
import os, sys, time
rd, wr = os.pipe()
c = os.fork()
if c == 0:
    g = os.fork()
    if g == 0:
        try:
            os.setsid(); msg = "setsid ok"
        except OSError as e:
            msg = "setsid errno %d" % e.errno
        os.write(wr, (msg + "\ngrandchild %d\n" % os.getpid()).encode())
        while True: time.sleep(1)
    os._exit(0)
os.waitpid(c, 0)
os.close(wr)
print(os.read(rd, 200).decode(), end="", flush=True)
`

// The fork bomb, which only the action's pids.max bounds, has a test of
// its own (broker_limits_test.go): it must not run where that limit is
// not enforced.

// holdStdout leaves a grandchild holding stdout open after the root exits.
const holdStdout = `
import os, time
c = os.fork()
if c == 0:
    if os.fork() == 0:
        while True: time.sleep(1)
    os._exit(0)
os.waitpid(c, 0)
print("root exits", flush=True)
`

// groupCase is one target that tries to outlive its action.
type groupCase struct {
	name    string
	argv    []string // after the executable; "MARK" is replaced by the marker
	exe     string
	seen    int // processes the /proc scan must see while it runs
	outcome wire.Outcome
	kill    bool   // SIGTERM cannot be enough
	stdout  string // a line the target must have printed
}

// TestBrokerEndsEveryGroup runs every target at once on one daemon (each
// in its own session), checks that the /proc scan sees its processes
// while it runs, then that the broker ended it with the group confirmed
// gone and nothing carrying its marker left.
func TestBrokerEndsEveryGroup(t *testing.T) {
	d := shared(t)
	py := python(t)
	cases := []groupCase{
		{name: "timeout-ignores-SIGTERM", exe: py, argv: []string{"-c", ignoreTerm, "MARK"}, seen: 2,
			outcome: wire.TimedOutReaped, kill: true, stdout: "child "},
		{name: "stops-itself", exe: py, argv: []string{"-c", stopSelf, "MARK"}, seen: 2,
			outcome: wire.TimedOutReaped, stdout: "child "},
		{name: "double-fork-setsid-escapee", exe: py, argv: []string{"-c", escapee, "MARK"}, seen: 1,
			outcome: wire.Exited, stdout: "setsid errno 1\n"},
		{name: "grandchild-holds-stdout", exe: py, argv: []string{"-c", holdStdout, "MARK"}, seen: 1,
			outcome: wire.Exited, stdout: "root exits\n"},
	}
	type started struct {
		a      *agent
		handle string
		mark   string
	}
	runs := make([]started, len(cases))
	for i, c := range cases {
		a := d.newAgent(t)
		mark := token(t)
		t.Cleanup(func() { killMarked(t, mark) })
		argv := slices.Clone(c.argv)
		for j := range argv {
			argv[j] = strings.ReplaceAll(argv[j], "MARK", mark)
		}
		runs[i] = started{a, a.Start(a.request(wire.ProfileShort, c.exe, argv...), 1), mark}
		if c.outcome != wire.Exited { // a target that exits at once may be gone before any scan
			awaitMarked(t, mark, c.seen)
		}
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := runs[i]
			r := s.a.End(s.handle)
			if r.Outcome != c.outcome {
				t.Fatalf("want %s, got %s %+v; stdout %q stderr %q", c.outcome, r.Outcome, r.Error, r.Stdout.Text, r.Stderr.Text)
			}
			if c.outcome == wire.Exited && *r.ExitCode != 0 {
				t.Fatalf("the root exits 0; got %d, stderr %q", *r.ExitCode, r.Stderr.Text)
			}
			if !strings.Contains(r.Stdout.Text, c.stdout) {
				t.Fatalf("stdout %q lacks %q (stderr %q)", r.Stdout.Text, c.stdout, r.Stderr.Text)
			}
			rc := requireGone(t, d, r, s.mark)
			if c.kill && (!hasEvent(rc, receipt.EventTermSent) || !hasEvent(rc, receipt.EventKillSent)) {
				t.Errorf("members ignoring SIGTERM need TERM then KILL; receipt events %+v", rc.Events)
			}
		})
	}
}

// awaitMarked waits until the /proc scan sees at least n processes
// carrying mark: the scan that later finds none can see them.
func awaitMarked(t *testing.T, mark string, n int) {
	t.Helper()
	deadline := time.Now().Add(daemonSafety)
	for time.Now().Before(deadline) {
		if len(marked(t, mark)) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the scan never saw %d process(es) carrying the marker", n)
}
