package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"warrant/broker/client"
	"warrant/wire"
)

// buildBroker builds this command into a temporary directory, with extra
// build flags.
func buildBroker(t *testing.T, flags ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the broker: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "broker")
	args := append(append([]string{"build"}, flags...), "-o", bin, ".")
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build broker: %v\n%s", err, out)
	}
	return bin
}

var launcherOnce struct {
	sync.Once
	path string
	err  error
}

// buildLauncher builds the real launcher once per test binary; `broker
// serve` pins it at start.
func buildLauncher(t *testing.T) string {
	t.Helper()
	launcherOnce.Do(func() {
		dir, err := os.MkdirTemp("", "warrant-launcher")
		if err != nil {
			launcherOnce.err = err
			return
		}
		launcherOnce.path = filepath.Join(dir, "launcher")
		cmd := exec.Command("go", "build", "-o", launcherOnce.path, "warrant/cmd/launcher")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			launcherOnce.err = fmt.Errorf("build launcher: %v\n%s", err, out)
		}
	})
	if launcherOnce.err != nil {
		t.Fatal(launcherOnce.err)
	}
	return launcherOnce.path
}

// TestMain removes the launcher that buildLauncher built for all tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if launcherOnce.path != "" {
		os.RemoveAll(filepath.Dir(launcherOnce.path))
	}
	os.Exit(code)
}

// daemon is one running `broker serve`.
type daemon struct {
	cmd    *exec.Cmd
	paused chan struct{}
	done   chan struct{}
}

func startDaemon(t *testing.T, bin, state, pause string) *daemon {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--state", state)
	cmd.Env = append(os.Environ(), "WARRANT_CRASHTEST_PAUSE="+pause, "WARRANT_LAUNCHER="+buildLauncher(t))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, paused: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "warrant-crashtest: paused at") && !once {
				once = true
				close(d.paused)
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	return d
}

func (d *daemon) kill(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.cmd.Wait()
	<-d.done
}

func dialRetry(t *testing.T, state string) *client.Client {
	t.Helper()
	var last error
	for range 2000 {
		cl, err := client.Dial(state)
		if err == nil {
			return cl
		}
		last = err
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the broker never answered: %v", last)
	return nil
}

// TestCrashConsistency SIGKILLs a real `broker serve` many times at points
// around the EXECUTING transaction (before it, inside it before COMMIT,
// after COMMIT before the reply, inside the approve transaction, and at
// arbitrary moments) and checks after every kill and restart that no
// lease use was refunded or spent twice, no action ran twice, every
// interrupted action is unknown, and the database is sound.
func TestCrashConsistency(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the broker and restarts it many times; skipped with -short")
	}
	bin := buildBroker(t, "-tags", "warrant_crashtest")
	dir := t.TempDir()
	state, ws := filepath.Join(dir, "state"), filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	req := wire.ActionRequest{Executable: "true", Argv: []string{"a;b", "$(x)"}, Cwd: ".", Profile: wire.ProfileShort}
	rng := rand.New(rand.NewPCG(4, 2))
	stages := []string{"checkpoint:begin", "checkpoint:in-tx", "checkpoint:committed", "approve:in-tx", ""}
	accepted := map[string]bool{}
	seen := &observed{left: map[string]int64{}, actions: map[string]bool{}}
	const iterations = 30
	for i := range iterations {
		stage := stages[i%len(stages)]
		pause := ""
		if stage != "" {
			pause = stage + ":" + string(rune('1'+rng.IntN(3)))
		}
		d := startDaemon(t, bin, state, pause)
		cl := dialRetry(t, state)
		killAt := 5 + rng.IntN(20) // operations before an unpaused kill
	drive:
		for op := 0; ; op++ {
			if op == 500 {
				d.kill(t)
				t.Fatalf("iteration %d: the daemon never reached %q", i, pause)
			}
			if stage == "" && op == killAt {
				delay := time.Duration(rng.IntN(2000)) * time.Microsecond
				go func() { time.Sleep(delay); d.cmd.Process.Signal(syscall.SIGKILL) }()
			}
			type answer struct {
				handle string
				err    error
			}
			result := make(chan answer, 1)
			uses := uint32(1 + rng.IntN(3))
			go func() {
				s, err := cl.Submit(ws, req)
				if err == nil && s.Approval != nil {
					_, err = cl.Approve(s.Approval.ID, uses, time.Hour)
				}
				result <- answer{s.Handle, err}
			}()
			select {
			case a := <-result:
				if a.handle != "" {
					accepted[a.handle] = true
				}
				if a.err != nil {
					break drive // the daemon died under us
				}
			case <-d.paused:
				break drive
			}
		}
		d.kill(t)
		cl.Close()
		seen.check(t, filepath.Join(state, "journal.db"), accepted, i)
	}
	// A last clean start: every action from before is unknown and listed.
	d := startDaemon(t, bin, state, "")
	cl := dialRetry(t, state)
	l, err := cl.List(wire.ListActions, true)
	if err != nil {
		t.Fatal(err)
	}
	d.kill(t)
	cl.Close()
	if len(l.Actions) != len(seen.actions) {
		t.Fatalf("%d unknown actions listed, %d recorded", len(l.Actions), len(seen.actions))
	}
	if len(accepted) == 0 {
		t.Fatal("no action was ever accepted; the test proved nothing")
	}
	t.Logf("%d restarts, %d actions checkpointed, %d accepted replies seen", iterations, len(seen.actions), len(accepted))
}

// observed is what earlier checks saw.
type observed struct {
	left    map[string]int64 // lease → uses left
	actions map[string]bool  // every action recorded so far
}

func (o *observed) check(t *testing.T, dbPath string, accepted map[string]bool, iter int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var verdict string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&verdict); err != nil || verdict != "ok" {
		t.Fatalf("iteration %d: integrity_check = %q, %v", iter, verdict, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT l.id, l.uses_granted, l.uses_left, (SELECT COUNT(*) FROM actions a WHERE a.lease_id = l.id) FROM leases l`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var granted, left, used int64
		if err := rows.Scan(&id, &granted, &left, &used); err != nil {
			t.Fatal(err)
		}
		if left+used != granted {
			t.Fatalf("iteration %d: lease %s granted %d, %d left, %d actions: a use was refunded or double-spent", iter, id, granted, left, used)
		}
		if prev, ok := o.left[id]; ok && left > prev {
			t.Fatalf("iteration %d: lease %s went from %d uses left to %d", iter, id, prev, left)
		}
		o.left[id] = left
	}
	rows.Close()
	states := map[string]string{}
	rows, err = db.QueryContext(ctx, `SELECT handle, state FROM actions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var h, s string
		if err := rows.Scan(&h, &s); err != nil {
			t.Fatal(err)
		}
		states[h] = s
	}
	rows.Close()
	for h := range o.actions {
		if states[h] != "unknown" {
			t.Fatalf("iteration %d: action %s survived a restart as %q, want unknown", iter, h, states[h])
		}
	}
	for h, s := range states {
		if s != "unknown" && s != "executing" {
			t.Fatalf("iteration %d: action %s is %q; nothing here can have run to an end", iter, h, s)
		}
		o.actions[h] = true
	}
	for h := range accepted {
		if !o.actions[h] {
			t.Fatalf("iteration %d: handle %s was accepted but is not in the journal", iter, h)
		}
	}
	started, _ := os.ReadFile(filepath.Join(filepath.Dir(dbPath), "crashtest-started"))
	once := map[string]bool{}
	for h := range strings.FieldsSeq(string(started)) {
		if once[h] {
			t.Fatalf("iteration %d: action %s was started twice", iter, h)
		}
		if !o.actions[h] {
			t.Fatalf("iteration %d: started action %s is not in the journal", iter, h)
		}
		once[h] = true
	}
}
