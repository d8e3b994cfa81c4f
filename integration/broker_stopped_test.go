//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/wire"
)

// replyBound is the client's reply bound the tests below give the CLI
// (WARRANT_REPLY_TIMEOUT), so that a stopped daemon is given up on in
// seconds rather than the default's 30. hangGuard only keeps a client
// that never gives up from hanging the suite; no test asserts on time.
const (
	replyBound = "2s"
	hangGuard  = time.Minute
)

// boundedCLI is `broker ARGS...` against d with the test's reply bound.
func boundedCLI(d *brokerd, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd, out, errb := brokerCmd(append([]string{args[0], "--state", d.State}, args[1:]...)...)
	cmd.Env = append(cmd.Env, "WARRANT_REPLY_TIMEOUT="+replyBound)
	return cmd, out, errb
}

// finish waits for cmd to exit and returns its exit status; it fails the
// test if cmd is still waiting after hangGuard.
func finish(t *testing.T, what string, cmd *exec.Cmd, errb *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s still waited on the stopped daemon after %s; stderr:\n%s", what, hangGuard, errb)
	}
	return cmd.ProcessState.ExitCode()
}

// runObject is what the tests below read of `broker run --json`.
type runObject struct {
	Handle  *string `json:"handle"`
	Outcome string  `json:"outcome"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeRun(t *testing.T, out *bytes.Buffer) runObject {
	t.Helper()
	var o runObject
	if err := json.Unmarshal(out.Bytes(), &o); err != nil {
		t.Fatalf("broker run --json printed no object: %v\n%s", err, out)
	}
	if o.Error != nil {
		t.Logf("broker run: %s: %s: %s", o.Outcome, o.Error.Code, o.Error.Message)
	}
	return o
}

// TestStoppedDaemonBoundsEveryClient runs clients against a real daemon
// that is SIGSTOPped. First, while it runs, a `broker run` of an action
// longer than the reply bound succeeds: a live daemon answers each poll.
// Stopped: a `broker run` waiting on its running action gives up (exit
// 123, outcome unknown: the action was accepted); one started then
// submits nothing (exit 125, IO_FAILED; after SIGCONT the journal has no
// action of it); an operator command exits 1 with IO_FAILED; and a
// `broker run` waiting on it exits on SIGINT, and on SIGTERM, as unknown
// without waiting for the bound, with --json (waiting) and without it
// (following the output stream).
func TestStoppedDaemonBoundsEveryClient(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	mark := token(t)
	t.Cleanup(func() { killMarked(t, mark) })
	up := filepath.Join(a.WS, "up")
	stop := func() {
		t.Helper()
		if err := syscall.Kill(d.Pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	resume := func() { syscall.Kill(d.Pid(), syscall.SIGCONT) }
	t.Cleanup(resume) // before the daemon is killed
	runs := 0
	// started is a `broker run` whose action is running.
	started := func(flags ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		t.Helper()
		runs++
		args := append(append([]string{"run", "--approve"}, flags...), "--workspace", a.WS, "--session", "s-"+token(t),
			"--", "sh", "-c", "echo up >> up; exec sleep 120 # "+mark)
		cmd, out, errb := boundedCLI(d, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			b, _ := os.ReadFile(up)
			if strings.Count(string(b), "up\n") >= runs {
				return cmd, out, errb
			}
			if i > 20000 {
				cmd.Process.Kill()
				t.Fatalf("the action of broker run never started; stderr:\n%s", errb)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// A live daemon is not taken for a stopped one: it answers every
	// poll while an action runs for longer than the reply bound.
	cmd, out, errb := boundedCLI(d, "run", "--approve", "--json", "--workspace", a.WS, "--", "sleep", "4")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := finish(t, "broker run of sleep 4", cmd, errb); code != 0 {
		t.Fatalf("broker run of sleep 4 with a %s reply bound: exit %d, want 0; stdout:\n%s\nstderr:\n%s", replyBound, code, out, errb)
	}

	// The daemon starts an action before it writes the submit's reply, so
	// on a loaded machine the client may still be waiting for that reply
	// when the daemon stops: it then has no handle, and says that its
	// submit went unanswered by a stopped broker that may have carried
	// it out. Either way the outcome is unknown and the stop is named.
	cmd, out, errb = started("--json")
	stop()
	if code := finish(t, "broker run waiting on its action", cmd, errb); code != 123 {
		t.Errorf("broker run waiting on its action: exit %d, want 123; stderr:\n%s", code, errb)
	}
	if o := decodeRun(t, out); o.Outcome != "unknown" || o.Error == nil || !strings.Contains(o.Error.Message, "stopped") ||
		(o.Handle == nil && !strings.Contains(o.Error.Message, "the submit request")) {
		t.Errorf("broker run waiting on its action: %s", out)
	} else if o.Handle == nil {
		t.Logf("the client was still awaiting its submit's reply when the daemon stopped")
	}

	cmd, out, errb = boundedCLI(d, "run", "--approve", "--json", "--workspace", a.WS, "--", "true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if code := finish(t, "broker run against the stopped daemon", cmd, errb); code != 125 {
		t.Errorf("broker run against the stopped daemon: exit %d, want 125; stderr:\n%s", code, errb)
	}
	if o := decodeRun(t, out); o.Outcome != wire.KnownNotExecuted.String() || o.Error == nil || o.Error.Code != "IO_FAILED" ||
		!strings.Contains(o.Error.Message, "nothing was submitted") {
		t.Errorf("broker run against the stopped daemon: %s", out)
	}

	cmd, _, errb = boundedCLI(d, "approvals")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	code := finish(t, "broker approvals", cmd, errb)
	t.Logf("broker approvals: exit %d: %s", code, errb)
	if code != 1 || !strings.Contains(errb.String(), "IO_FAILED") {
		t.Errorf("broker approvals against the stopped daemon: exit %d, want 1 with IO_FAILED; stderr:\n%s", code, errb)
	}

	resume()
	if l, err := a.cl.List(wire.ListActions, false); err != nil || len(l.Actions) != 2 {
		t.Fatalf("actions after the runs against the stopped daemon: %+v %v, want only the two before it stopped", l, err)
	}

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, out, errb = started("--json")
		stop()
		cmd.Process.Signal(sig)
		if code := finish(t, "broker run sent "+sig.String(), cmd, errb); code != 123 {
			t.Errorf("broker run sent %s while the daemon is stopped: exit %d, want 123; stderr:\n%s", sig, code, errb)
		}
		if o := decodeRun(t, out); o.Outcome != "unknown" || o.Error == nil || !strings.Contains(o.Error.Message, "stopped") {
			t.Errorf("broker run sent %s while the daemon is stopped: %s", sig, out)
		}
		resume()
	}

	// Without --json, run follows the action's output stream; the same
	// interrupt ends it as unknown.
	cmd, _, errb = started()
	stop()
	cmd.Process.Signal(syscall.SIGINT)
	if code := finish(t, "broker run (following) sent SIGINT", cmd, errb); code != 123 || !strings.Contains(errb.String(), "is stopped") {
		t.Errorf("broker run following its action, sent SIGINT while the daemon is stopped: exit %d, want 123 saying it is stopped; stderr:\n%s", code, errb)
	}
	resume()
}

// muteOperator is a state directory whose agent socket relays to d's and
// whose operator socket reads and never answers; once a request has
// arrived there (asked is closed), the relay passes no more of d's
// answers either. To the client that is a daemon stopped while it holds
// the request.
func muteOperator(t *testing.T, d *brokerd) (state string, asked <-chan struct{}) {
	t.Helper()
	state = t.TempDir()
	agentPath, operatorPath := client.SocketPaths(state)
	realAgent, _ := client.SocketPaths(d.State)
	if err := os.Mkdir(filepath.Dir(agentPath), 0o700); err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	relay, err := net.Listen("unix", agentPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	go func() {
		for {
			c, err := relay.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", realAgent)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(up, c); up.Close() }()
			go func() { answerUntil(c, up, got); c.Close() }()
		}
	}()
	mute, err := net.Listen("unix", operatorPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	go func() {
		c, err := mute.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var b [1]byte
		if _, err := c.Read(b[:]); err == nil {
			close(got)
		}
		io.Copy(io.Discard, c)
	}()
	return state, got
}

// answerUntil copies what the daemon answers on up to the client on c
// until stop is closed, and discards it from then on.
func answerUntil(c, up net.Conn, stop <-chan struct{}) {
	buf := make([]byte, 4096)
	for {
		n, err := up.Read(buf)
		select {
		case <-stop:
		default:
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// unboundReply is the reply timeout of the runs below: longer than
// hangGuard and daemonSafety, so that a run that still waited on any
// unanswered call after the interrupt would be stopped by those guards,
// and fail, rather than end at the timeout.
const unboundReply = "10m"

// unansweredGrant is the sentence of a run whose decision on an approval
// request went unanswered because it was interrupted.
const unansweredGrant = "interrupted before the broker answered the approve request; the broker may have made the decision"

// TestInterruptEndsARunWhoseGrantIsUnanswered: `broker run --approve`
// interrupted while its grant goes unanswered (muteOperator) exits at
// once, instead of waiting out its reply timeout, as not executed (its
// submit was answered: nothing was checkpointed), saying that the request
// may have been decided; nothing ran. A run that ignored the interrupt
// would still be waiting when hangGuard stops it (unboundReply).
func TestInterruptEndsARunWhoseGrantIsUnanswered(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	state, asked := muteOperator(t, d)
	cmd, out, errb := brokerCmd("run", "--state", state, "--approve", "--json", "--workspace", a.WS, "--", "true")
	cmd.Env = append(cmd.Env, "WARRANT_REPLY_TIMEOUT="+unboundReply)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(hangGuard):
		cmd.Process.Kill()
		t.Fatalf("broker run --approve never sent its grant; stderr:\n%s", errb)
	}
	cmd.Process.Signal(syscall.SIGINT)
	if code := finish(t, "broker run --approve interrupted during its grant", cmd, errb); code != 125 {
		t.Errorf("broker run --approve interrupted during its grant: exit %d, want 125; stderr:\n%s", code, errb)
	}
	if o := decodeRun(t, out); o.Outcome != wire.KnownNotExecuted.String() || o.Handle != nil || o.Error == nil || o.Error.Code != "IO_FAILED" ||
		!strings.Contains(o.Error.Message, unansweredGrant) || !strings.Contains(o.Error.Message, "nothing ran") {
		t.Errorf("broker run --approve interrupted during its grant: %s", out)
	}
	if l, err := a.cl.List(wire.ListActions, false); err != nil || len(l.Actions) != 0 {
		t.Errorf("actions after the interrupted grant: %+v %v, want none", l, err)
	}
}

// TestPromptInterruptDuringAnUnansweredGrant is the same at the prompt: y
// typed, the grant unanswered, then Ctrl-C. The run neither waits out the
// reply timeout for the grant nor for the decision it was also waiting
// on; it exits at once as not executed, and nothing ran.
func TestPromptInterruptDuringAnUnansweredGrant(t *testing.T) {
	r := newPromptRig(t)
	state, asked := muteOperator(t, r.d)
	t.Setenv("WARRANT_REPLY_TIMEOUT", unboundReply)
	p := startPTY(t, "run", "--state", state, "--workspace", r.ws, "--", "/bin/sh", "-c", "echo ran > marker")
	p.prompted()
	p.typeKeys("y\n")
	select {
	case <-asked:
	case <-time.After(hangGuard):
		t.Fatalf("the prompt never sent its grant:\n%s", p.out)
	}
	p.typeKeys("\x03")
	p.wantExit(exitNotExecuted, "after y and Ctrl-C with the grant unanswered")
	if s := p.afterPrompt(); !strings.Contains(s, unansweredGrant) || !strings.Contains(s, "nothing ran") {
		t.Fatalf("after y and Ctrl-C with the grant unanswered:\n%s", s)
	}
	r.noMarker(t)
}
