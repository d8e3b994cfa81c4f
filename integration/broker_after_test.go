//go:build linux

package integration

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"warrant/broker/runner"
	"warrant/wire"
)

// heldEnd is the real runner whose observers hold each action once its
// end is recorded (the broker's End returned: receipt sealed, waiter
// answered) until the test lets it go.
type heldEnd struct {
	*runner.Runner
	hold    atomic.Bool   // from the test's first action on (not the daemon's probe)
	ended   chan string   // the handle, once its End returned
	release chan struct{} // one receive per action
}

func (h *heldEnd) Start(ctx context.Context, l *runner.Launch, obs runner.Observer) error {
	return h.Runner.Start(ctx, l, &heldObserver{Observer: obs, h: h, handle: l.Handle})
}

type heldObserver struct {
	runner.Observer
	h      *heldEnd
	handle string
}

func (o *heldObserver) End(obs *runner.Observation) {
	o.Observer.End(obs)
	if !o.h.hold.Load() {
		return
	}
	o.h.ended <- o.handle
	<-o.h.release
}

// TestActionsBackgroundWorkStartsOnceItsEndIsRecorded: the work an action
// leaves for the background, making the next warm launcher and removing
// its cgroups, starts only once its end is recorded, so that it competes
// with no part of the action's own path: while the end is held, no warm
// launcher is made and the action's cgroup v1 directories are still
// there; once it is let go, both happen.
func TestActionsBackgroundWorkStartsOnceItsEndIsRecorded(t *testing.T) {
	requireV2(t)
	ctx := context.Background()
	r, v1 := realRunner(t, "after-", true)
	h := &heldEnd{Runner: r, ended: make(chan string, 10), release: make(chan struct{})}
	br, sub, err := approvedTrue(h, t.TempDir(), 10)
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	defer func() { // as a daemon closes: a failed test first lets every held action go
		close(h.release)
		r.Close()
		br.Close()
	}()
	h.hold.Store(true)
	run := func() string {
		t.Helper()
		m, err := br.Submit(ctx, sub)
		acc, ok := m.(*wire.Accepted)
		if err != nil || !ok {
			t.Fatalf("submit: %#v %v", m, err)
		}
		select {
		case handle := <-h.ended:
			return handle
		case <-time.After(daemonSafety):
			t.Fatalf("action %s has not ended after %s", acc.Handle, daemonSafety)
			return ""
		}
	}
	warm := func() int { pid, _ := slotChild(os.Getpid(), 0); return pid } // a child of this process waiting in a slot
	run()                                                                  // the first action starts its own launcher: no slot is made before one
	h.release <- struct{}{}
	waitFor(t, "a warm launcher", func() bool { return warm() != 0 })

	handle := run() // takes that slot; its cgroups are renamed to its handle
	mem := filepath.Join(v1, handle)
	time.Sleep(50 * time.Millisecond) // time for work that should not have started (a slow machine only weakens this)
	if pid := warm(); pid != 0 {
		t.Fatalf("a warm launcher (pid %d) was made before the end of the action that took the last one was recorded", pid)
	}
	if _, err := os.Stat(mem); err != nil {
		t.Fatalf("the action's cgroup was removed before its end was recorded: %v", err)
	}
	h.release <- struct{}{}
	waitFor(t, "the next warm launcher", func() bool { return warm() != 0 })
	waitFor(t, "the removal of the action's cgroup", func() bool { _, err := os.Stat(mem); return os.IsNotExist(err) })
}

// waitFor polls cond until it holds, failing t after daemonSafety.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(daemonSafety); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", what, daemonSafety)
		}
	}
}
