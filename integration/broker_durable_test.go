//go:build linux

package integration

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/broker"
	"warrant/broker/runner"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// TestRealRunnerExecutesOnlyOnceTheCheckpointIsDurable: through the real
// runner and launcher (in this process, as the daemon has them), an
// approved `touch` first runs and its file appears; then the journal's
// fsync fails, the next submit of the same action is refused IO_FAILED,
// and once every launch has ended the file is still absent. The broker's
// own test (TestSubmitAnsweredOnceTheCheckpointIsDurable) uses an
// executor double; this one shows the runner hands the checkpoint's wait
// to the lifecycle, which sends Proceed only after it.
func TestRealRunnerExecutesOnlyOnceTheCheckpointIsDurable(t *testing.T) {
	for _, warm := range []bool{false, true} {
		name := "cold"
		if warm {
			name = "warm"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r, _ := realRunner(t, "durable-", warm)
			dir, err := os.MkdirTemp("", "warrant-durable-") // short: the probe's socket lives beneath it
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			br, err := broker.Open(ctx, broker.Config{StateDir: filepath.Join(dir, "state"), Executor: r,
				ProbeTarget: []string{bins.brokerd, "probe", probeprog.Arg}, Binaries: []string{bins.brokerd, bins.launcher}})
			if err != nil {
				r.Close()
				t.Fatal(err)
			}
			closed := false
			closeAll := func() { // the runner first: it returns once every launch has ended
				if !closed {
					closed = true
					r.Close()
					br.Close()
				}
			}
			defer closeAll()
			ws := filepath.Join(dir, "ws")
			if err := os.Mkdir(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(ws, "marker")
			sub := &wire.Submit{Workspace: ws, Request: wire.ActionRequest{Executable: "touch", Argv: []string{"marker"},
				Cwd: ".", Profile: wire.ProfileShort, Session: "s-durable"}}
			if err := approveInProcess(ctx, br, sub, 5); err != nil {
				t.Fatal(err)
			}

			// The control: with the journal's fsync working, the action runs.
			m, err := br.Submit(ctx, sub)
			acc, ok := m.(*wire.Accepted)
			if err != nil || !ok {
				t.Fatalf("submit with a working fsync: %#v, %v", m, err)
			}
			st, err := br.Wait(ctx, acc.Handle, time.Minute)
			if s, ok := st.(*wire.Status); err != nil || !ok || s.Result == nil || s.Result.Outcome != wire.Exited {
				t.Fatalf("the control's end: %#v, %v", st, err)
			}
			if _, err := os.Lstat(marker); err != nil {
				t.Fatalf("the control ran but left no file: %v", err)
			}
			if err := os.Remove(marker); err != nil {
				t.Fatal(err)
			}

			if warm { // the refused submit must be the warm launcher's, made once the control ended
				awaitWarmLauncher(t)
			}
			br.Journal().SetFsync(func(int) error { return syscall.EIO })
			m, err = br.Submit(ctx, sub)
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != wire.CodeIOFailed || !strings.Contains(we.Message, "so it was not run") {
				t.Fatalf("submit with a failing fsync: %#v, %v; want IO_FAILED", m, err)
			}
			closeAll()
			if _, err := os.Lstat(marker); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the target ran although its checkpoint was not durable: lstat %s: %v", marker, err)
			}
		})
	}
}

// realRunner starts the real runner, in this process, in a scope of its
// own named with prefix, and returns it with its scope's cgroup v1 memory
// directory. A warm one is kept only with that directory to carry a
// slot's handle (decided from the host before anything runs): without
// it, the test is skipped, saying so.
func realRunner(t *testing.T, prefix string, warm bool) (*runner.Runner, string) {
	t.Helper()
	scope := prefix + token(t)
	r, err := runner.New(runner.Options{Launcher: bins.launcher, Scope: scope, Warm: warm}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range scopeDirs(scope) {
		if _, err := os.Stat(d); err == nil && strings.HasPrefix(d, "/sys/fs/cgroup/memory/") {
			return r, d
		}
	}
	if warm {
		r.Close()
		t.Skipf("skip: the runner made no cgroup v1 memory directory for %s here (%v), so it keeps no warm launcher", scope, scopeDirs(scope))
	}
	return r, ""
}

// awaitWarmLauncher waits until this process, the runner's, has a warm
// launcher waiting in a slot (slotChild).
func awaitWarmLauncher(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(daemonSafety); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if pid, _ := slotChild(os.Getpid(), 0); pid != 0 {
			return
		}
	}
	t.Fatalf("the runner has no warm launcher after %s", daemonSafety)
}
