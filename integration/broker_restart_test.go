//go:build linux

package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// startsThenSleeps appends its pid to the file argv[1] each time it
// starts, forks a child that appends its own, and sleeps.
const startsThenSleeps = `
import os, sys, time
def note(s):
    with open(sys.argv[1], "a") as f: f.write(s + "\n")
note("start %d" % os.getpid())
if os.fork() == 0:
    note("child %d" % os.getpid())
    while True: time.sleep(1)
while True: time.sleep(1)
`

// TestBrokerSIGKILLMidRunThenRestart kills a real daemon while its action
// runs and starts a new one on the same state directory. The action is
// unknown (result and UNKNOWN_TERMINATION receipt, claiming no pid, exit
// or group-gone evidence), its lease use stays spent, nothing re-runs
// (the target notes every start: exactly one), the receipt log still
// verifies, the processes that outlived the broker are ended by the next
// one (still in the action's cgroups), and `broker resolve` records a
// statement, not a receipt.
func TestBrokerSIGKILLMidRunThenRestart(t *testing.T) {
	d1, a, mark := markedAgent(t)
	starts := filepath.Join(a.WS, "starts")
	req := a.request(wire.ProfileShort, python(t), "-c", startsThenSleeps, starts, mark)
	h := a.Start(req, 1)
	a.awaitRunning(h, starts, 4)
	d2, a2, orphans := restartAfterSIGKILL(t, d1, a, mark)
	st, err := a2.cl.Query(h)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != wire.StateUnknown || st.Result == nil || st.Result.Outcome != wire.OutcomeUnknown || st.Result.GroupGone {
		t.Fatalf("after the restart the action must be unknown without a group-gone claim; got %+v %+v", st, st.Result)
	}
	if st.Result.Error == nil || st.Result.Error.Code != wire.CodeUnknownOutcome {
		t.Fatalf("unknown without its code: %+v", st.Result.Error)
	}

	leases, err := a2.cl.List(wire.ListLeases, false)
	if err != nil || len(leases.Leases) != 1 || leases.Leases[0].UsesLeft != 0 {
		t.Fatalf("the lease use must stay spent: %+v, %v", leases, err)
	}
	s, err := a2.cl.Submit(a.WS, req)
	if err != nil || s.Approval == nil {
		t.Fatalf("the same command again must need a new approval (the lease is spent): %+v, %v", s, err)
	}
	if n := countPrefix(t, starts, "start "); n != 1 {
		t.Fatalf("the target started %d times; an unknown action must never re-run", n)
	}

	rc := d2.Receipt(h)
	if rc.Outcome != wire.OutcomeUnknown || !hasEvent(rc, receipt.EventUnknownTermination) || !hasEvent(rc, receipt.EventExecuting) {
		t.Fatalf("receipt: outcome %s, events %+v", rc.Outcome, rc.Events)
	}
	if rc.GroupGone != nil || rc.Pid != nil || rc.ExitCode != nil || rc.Signal != nil || rc.Limits.EnforcedBy.String() != "unknown" {
		t.Fatalf("the unknown receipt claims what the new broker never observed: %+v", rc)
	}
	before := d2.Verify()
	if _, err := os.Stat(filepath.Join(d1.State, "actions", h, "home")); err != nil {
		t.Fatalf("the private directories of an unknown action must be kept (a survivor may use them): %v", err)
	}

	// The orphaned processes were still inside the action's cgroups, so
	// the new broker ended them (its answer stays unknown) and said so.
	if alive := marked(t, mark); len(alive) > 0 {
		t.Fatalf("orphaned process(es) %v of %s are alive after the restart:\n%s", alive, h, d2.log.String())
	}
	log := d2.log.String()
	for _, pid := range orphans {
		if !strings.Contains(log, h) || !strings.Contains(log, "were ended by") || !strings.Contains(log, strconv.Itoa(pid)) {
			t.Fatalf("orphaned process %d of %s was not reported as ended by the new broker:\n%s", pid, h, log)
		}
	}
	if len(orphans) == 0 {
		// The target sleeps and nothing ends it when its broker dies, so
		// it must have been there; without it the check above went untested.
		t.Fatalf("no process of the action survived the broker's SIGKILL")
	}
	t.Logf("the new broker ended the orphaned process(es) %v", orphans)

	if out, code := d2.CLI("resolve", h, "failed", "--note", "operator checked by hand"); code != 0 || !strings.Contains(out, "statement") {
		t.Fatalf("broker resolve: exit %d: %s", code, out)
	}
	after := d2.Verify()
	if after.Entries != before.Entries || after.Receipts != before.Receipts {
		t.Fatalf("resolve added to the receipt log (%d → %d entries): a classification is a statement, not a receipt", before.Entries, after.Entries)
	}
	if rc := d2.Receipt(h); rc.Outcome != wire.OutcomeUnknown {
		t.Fatalf("resolve changed the receipt's outcome to %s", rc.Outcome)
	}
	if st, err := a2.cl.Query(h); err != nil || st.Result.Outcome != wire.OutcomeUnknown {
		t.Fatalf("after resolve the outcome must stay unknown: %+v, %v", st, err)
	}
	l, err := a2.cl.List(wire.ListActions, true)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(l.Actions, func(v wire.ActionView) bool { return v.Handle == h }) {
		t.Fatalf("a classified action is still listed as unclassified unknown")
	}
}

// markedAgent starts a daemon of the test's own, an agent of it, and a
// marker for the test's targets: whatever carries it is killed when the
// test ends.
func markedAgent(t *testing.T) (*brokerd, *agent, string) {
	d := startBroker(t, "")
	mark := token(t)
	t.Cleanup(func() { killMarked(t, mark) })
	return d, d.newAgent(t), mark
}

// restartAfterSIGKILL SIGKILLs d and starts a daemon on its state
// directory: it returns the new daemon, an agent of it in a's workspace,
// and the processes carrying mark that outlived d (their cgroup is
// removed when the test ends).
func restartAfterSIGKILL(t *testing.T, d *brokerd, a *agent, mark string) (*brokerd, *agent, []int) {
	d.kill()
	orphans := marked(t, mark)
	t.Cleanup(func() { removeCgroupOf(t, orphans) })
	d2 := startBroker(t, d.State)
	return d2, &agent{t: t, d: d2, cl: d2.dial(), WS: a.WS}, orphans
}

// countPrefix counts the lines of path that start with prefix.
func countPrefix(t *testing.T, path, prefix string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}

// removeCgroupOf removes the (by then empty) cgroup the broker created for
// the orphaned processes pids, which no broker cleans up after a SIGKILL.
// It runs after killMarked (cleanups run last-registered first).
func removeCgroupOf(t *testing.T, pids []int) {
	if len(pids) == 0 {
		return
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pids[0]))
	if err != nil {
		return // already gone; its cgroup path is unknown now
	}
	var rel string
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			rel = p
		}
	}
	if !strings.Contains(rel, "/warrant/") {
		return
	}
	killPids(pids)
	dir := filepath.Join("/sys/fs/cgroup/unified", rel)
	for range 400 {
		if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("could not remove the orphaned action's cgroup %s", dir)
}
