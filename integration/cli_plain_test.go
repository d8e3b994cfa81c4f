//go:build linux

package integration

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/broker/client"
	"warrant/broker/view"
	"warrant/wire"
)

// TestProbeBesideARunningBrokerShowsItsReport: `broker probe` on a state
// directory a daemon serves cannot probe (the daemon holds the state
// lock); it says so in a sentence, without the lock's Go error, and shows
// the daemon's report, saying when it was made (exit 0: verified), in
// text and JSON. The report's table names the binding of each row: a
// heading per binding, each row under one of them, every check counted
// once.
func TestProbeBesideARunningBrokerShowsItsReport(t *testing.T) {
	d := startBroker(t, "")
	cmd, out, errb := brokerCmd("probe", "--state", d.State)
	cmd.Run()
	text := out.String()
	probed := regexp.MustCompile(`(?m)^probed: +(\S+) in`).FindStringSubmatch(text)
	if code := cmd.ProcessState.ExitCode(); code != 0 || probed == nil ||
		!strings.Contains(errb.String(), "no probe ran: this is the report of the broker serving "+d.State+", made at "+probed[1]) ||
		strings.Contains(errb.String(), "lock") {
		t.Fatalf("broker probe beside the daemon: exit %d, want 0 and a sentence saying whose report it shows, made when; stderr:\n%s", code, errb)
	}
	if !strings.HasPrefix(text, "capability: verified\n") {
		t.Fatalf("broker probe beside the daemon does not show its report:\n%s", text)
	}
	total := regexp.MustCompile(`(?m)^(\d+) checks:$`).FindStringSubmatch(text)
	headings := regexp.MustCompile(`(?m)^under the ([a-z-]+) binding \([^)]+\): (\d+) checks$`).FindAllStringSubmatchIndex(text, -1)
	if total == nil || len(headings) != 2 {
		t.Fatalf("want the count of checks and a heading for each of the 2 bindings:\n%s", text)
	}
	sum := 0
	for i, h := range headings {
		end := len(text)
		if i+1 < len(headings) {
			end = headings[i+1][0]
		}
		rows := regexp.MustCompile(`(?m)^  (pass|FAIL) `).FindAllStringIndex(text[h[1]:end], -1)
		n, _ := strconv.Atoi(text[h[4]:h[5]])
		if len(rows) != n || n == 0 {
			t.Errorf("under %q: %d rows, the heading says %d", text[h[0]:h[1]], len(rows), n)
		}
		sum += n
	}
	if n, _ := strconv.Atoi(total[1]); sum != n {
		t.Errorf("the bindings' headings count %d checks of %d", sum, n)
	}

	cmd, out, _ = brokerCmd("probe", "--json", "--state", d.State)
	cmd.Run()
	var c struct {
		State  string `json:"state"`
		Checks []struct {
			Binding string `json:"binding"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(out.Bytes(), &c); err != nil || cmd.ProcessState.ExitCode() != 0 || c.State != "verified" || len(c.Checks) != sum {
		t.Fatalf("broker probe --json beside the daemon: exit %d, %v:\n%s", cmd.ProcessState.ExitCode(), err, out)
	}
}

// TestReceiptsListShowsTheCommand: `broker receipts list` shows each
// receipt's command as asked for, quoted for a shell (and the file that
// ran where that is another path), and --json carries it.
func TestReceiptsListShowsTheCommand(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	h, _ := a.Run(a.request(wire.ProfileShort, "/bin/echo", "hello world", "it's"))
	id := d.Receipt(h).ID
	text, code := d.CLI("receipts", "list")
	line := regexp.MustCompile(`(?m)^#\d+ +` + id + ` .*$`).FindString(text)
	if want := view.CommandLine("/bin/echo", []string{"hello world", "it's"}); code != 0 || !strings.Contains(line, "  "+want) {
		t.Fatalf("broker receipts list: exit %d, the line of %s does not show %s:\n%s", code, id, want, text)
	}
	out, _ := d.CLI("receipts", "list", "--json")
	type entry struct {
		Receipt *struct {
			ID         string   `json:"id"`
			Executable string   `json:"executable"`
			Requested  string   `json:"requested"`
			Argv       []string `json:"argv"`
		} `json:"receipt"`
	}
	for _, e := range wholeListing[entry](t, "receipts list", out) {
		if r := e.Receipt; r != nil && r.ID == id {
			if r.Requested != "/bin/echo" || strings.Join(r.Argv, "|") != "hello world|it's" || r.Executable == "" {
				t.Fatalf("broker receipts list --json: %+v", *r)
			}
			return
		}
	}
	t.Fatalf("broker receipts list --json does not list %s:\n%s", id, out)
}

// TestFollowerOfAStoppedBrokerSaysWhyInWords: a `broker run` following
// its action's output when the daemon stops (SIGSTOP) says that the live
// output stopped and why in a sentence — the broker sent nothing for the
// follower's bound — with no Go error chain (an "i/o timeout" of a "read
// unix"); under --debug that chain follows as its detail.
func TestFollowerOfAStoppedBrokerSaysWhyInWords(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	mark := token(t)
	t.Cleanup(func() { killMarked(t, mark) })
	t.Cleanup(func() { syscall.Kill(d.Pid(), syscall.SIGCONT) }) // before the daemon is killed
	run := func(flags ...string) *followed {
		t.Helper()
		args := append(append([]string{"run", "--approve", "--state", d.State, "--profile", "standard"}, flags...), "--workspace", a.WS,
			"--session", "s-"+token(t), "--", "sh", "-c", "echo up; exec sleep 120 # "+mark, token(t)) // each its own command: a lease of one is no other's
		f := &followed{cmd: exec.Command(bins.broker, args...), done: make(chan struct{})}
		f.cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher, "WARRANT_REPLY_TIMEOUT="+replyBound)
		f.cmd.Stdout, f.cmd.Stderr = &f.out, &f.errb
		if err := f.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { f.cmd.Wait(); close(f.done) }()
		t.Cleanup(func() { f.cmd.Process.Kill(); <-f.done })
		return f
	}
	plain, debug := run(), run("--debug")
	for deadline := time.Now().Add(daemonSafety); !strings.Contains(plain.out.String(), "up\n") || !strings.Contains(debug.out.String(), "up\n"); {
		if time.Now().After(deadline) {
			t.Fatalf("the actions never printed; stderr:\n%s\n%s", plain.errb.String(), debug.errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(d.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	said := "stopped (the broker sent nothing for " + client.FollowSilence.String() + ": it is stopped or overloaded) at byte 3 of stdout"
	for _, f := range []*followed{plain, debug} {
		select {
		case <-f.done:
		case <-time.After(hangGuard):
			t.Fatalf("broker run still followed the stopped daemon after %s; stderr:\n%s", hangGuard, f.errb.String())
		}
		if code := f.cmd.ProcessState.ExitCode(); code != 123 || !strings.Contains(f.errb.String(), said) {
			t.Errorf("broker run: exit %d, want 123 and %q:\n%s", code, said, f.errb.String())
		}
	}
	if m := regexp.MustCompile(`i/o timeout|read unix|follow a-`).FindString(plain.errb.String()); m != "" {
		t.Errorf("without --debug the follower's failure carries the Go error chain %q:\n%s", m, plain.errb.String())
	}
	if !strings.Contains(debug.errb.String(), "  detail: follow a-") || !strings.Contains(debug.errb.String(), "i/o timeout") {
		t.Errorf("under --debug the follower's failure does not carry its chain:\n%s", debug.errb.String())
	}
}

// followed is a `broker run` in flight and what it printed so far.
type followed struct {
	cmd       *exec.Cmd
	done      chan struct{} // closed once it exited
	out, errb syncBuffer
}

// TestClientLeavingBeforeItsAnswerIsNoError: clients that send a request
// and close their socket before the answer — a wait of a running action, a
// follow of its output, a submit, a listing — are ordinary: the daemon
// logs no error for the answers it could not write (no "internal error",
// no "write frame", no "broken pipe") and keeps serving.
func TestClientLeavingBeforeItsAnswerIsNoError(t *testing.T) {
	d := startBroker(t, "")
	a := d.newAgent(t)
	mark := token(t)
	t.Cleanup(func() { killMarked(t, mark) })
	h := a.Start(a.request(wire.ProfileShort, "sh", "-c", "while :; do echo "+mark+"; sleep 0.01; done"), 1)
	agentSock, operatorSock := client.SocketPaths(d.State)
	leave := func(sock string, m wire.Message) {
		t.Helper()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.WriteFrame(c, m); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	leave(agentSock, &wire.Wait{Handle: h, BudgetMs: 500})
	leave(agentSock, &wire.Follow{Handle: h})
	leave(agentSock, &wire.Submit{Workspace: a.WS, Request: a.request(wire.ProfileShort, "/bin/echo", mark)})
	leave(operatorSock, &wire.List{Kind: wire.ListLeases})
	time.Sleep(time.Second) // past the wait's budget: its answer is written to the closed socket
	if _, err := a.cl.Query(h); err != nil {
		t.Fatalf("the daemon does not answer after its clients left: %v", err)
	}
	if m := regexp.MustCompile(`internal error|write frame|broken pipe|connection reset`).FindString(d.log.String()); m != "" {
		t.Fatalf("the daemon logged %q for clients that left before their answers:\n%s", m, d.log)
	}
}
