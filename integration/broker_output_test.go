//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"warrant/broker/view"
	"warrant/wire"
)

// runner is where `broker run` finds its broker: the shared daemon, or a
// state directory no daemon answers on, where it serves an embedded one.
type brokerRunner struct {
	name  string
	state func(t *testing.T) string
}

var brokerRunners = []brokerRunner{
	{"daemon", func(t *testing.T) string { return shared(t).State }},
	{"embedded", func(t *testing.T) string {
		// Not under bins.dir or a workspace: the probe's policy grants
		// the first, and the state directory must stay out of reach.
		dir, err := os.MkdirTemp("", "warrant-embedded-state-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeScopeCgroups(dir); os.RemoveAll(dir) })
		return dir
	}},
}

// brokerRun is `broker run --approve --state STATE --workspace WS
// --profile P [flags] -- argv...`, not started.
func brokerRun(state, ws string, p wire.Profile, flags []string, argv ...string) *exec.Cmd {
	args := append([]string{"run", "--approve", "--state", state, "--workspace", ws, "--profile", p.String(),
		"--session", "s-" + fmt.Sprint(time.Now().UnixNano())}, flags...)
	cmd := exec.Command(bins.broker, append(append(args, "--"), argv...)...)
	cmd.Env = append(os.Environ(), "WARRANT_LAUNCHER="+bins.launcher)
	return cmd
}

func workspace(t *testing.T) string {
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// waitForGo is a target that prints a line, then blocks until a file
// named "go" appears in its working directory (giving up after a minute,
// with exit status 3), then prints another.
const waitForGo = `
import os, sys, time
print("ready", flush=True)
for _ in range(6000):
    if os.path.exists("go"):
        print("after go", flush=True)
        sys.exit(0)
    time.sleep(0.01)
sys.exit(3)
`

// TestBrokerRunStreamsLive: the target's first line reaches `broker
// run`'s stdout while the target is still running — against the daemon
// (the agent socket's Follow) as against the embedded broker. The target
// blocks until the test, having read that line, creates a file: had the
// line come only at the end, the target could never have seen the file.
func TestBrokerRunStreamsLive(t *testing.T) {
	py := python(t)
	for _, r := range brokerRunners {
		t.Run(r.name, func(t *testing.T) {
			ws := workspace(t)
			cmd := brokerRun(r.state(t), ws, wire.ProfileShort, nil, py, "-c", waitForGo)
			rd, errb := startPiped(t, cmd)
			expectReady(t, cmd, rd, errb)
			if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(rd)
			if err := cmd.Wait(); err != nil || string(rest) != "after go\n" {
				t.Fatalf("after the go file: %q, %v; stderr:\n%s", rest, err, errb.String())
			}
		})
	}
}

// startPiped starts cmd with its stdout on a pipe and its stderr kept.
func startPiped(t *testing.T, cmd *exec.Cmd) (*bufio.Reader, *bytes.Buffer) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &bytes.Buffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return bufio.NewReader(out), errb
}

// expectReady requires that the first line cmd prints is waitForGo's.
func expectReady(t *testing.T, cmd *exec.Cmd, rd *bufio.Reader, errb *bytes.Buffer) {
	t.Helper()
	if line, err := rd.ReadString('\n'); line != "ready\n" {
		cmd.Wait()
		t.Fatalf("first line %q (%v); stderr:\n%s", line, err, errb.String())
	}
}

// numbered is n bytes of numbered 12-byte lines: any byte range of it is
// recognisable.
func numbered(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %06d\n", i)
	}
	return b.String()[:n]
}

// printFile is a target that writes the file named by its argument to
// stdout.
const printFile = `import sys; sys.stdout.buffer.write(open(sys.argv[1], "rb").read())`

var handleRE = regexp.MustCompile(`action (a-[0-9a-f]+)`)

// TestBrokerRunOutputAgrees: 204,000 bytes under profile short, which
// retains 64 KiB at each end. Embedded and daemon runs print the same
// thing: every byte, live, and a summary that says so beside what the
// receipt retains; --json's text is exactly the projection its counts
// describe; `broker output` prints the retained head and tail with the
// marker naming the bytes between them, and a small action's output
// whole.
func TestBrokerRunOutputAgrees(t *testing.T) {
	py := python(t)
	const size = 204000
	want := numbered(size)
	for _, r := range brokerRunners {
		t.Run(r.name, func(t *testing.T) {
			state, ws := r.state(t), workspace(t)
			if err := os.WriteFile(filepath.Join(ws, "big"), []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			// Human mode.
			cmd := brokerRun(state, ws, wire.ProfileShort, nil, py, "-c", printFile, "big")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("broker run: %v\n%s", err, errb.String())
			}
			if out.String() != want {
				t.Fatalf("printed %d bytes, want the %d the target wrote", out.Len(), size)
			}
			summary := "  stdout: printed live 204000 of 204000 bytes; retained for the receipt: head 65536 + tail 65536 of 204000 bytes"
			if !strings.Contains(errb.String(), summary) || strings.Contains(errb.String(), "\x1b[K") {
				t.Fatalf("summary (want %q, and no progress line off a terminal):\n%s", summary, errb.String())
			}
			m := handleRE.FindStringSubmatch(errb.String())
			if m == nil {
				t.Fatalf("no handle in:\n%s", errb.String())
			}
			checkOutputCommand(t, state, m[1], want, 65536, 65536)

			// --json: the text is the head and tail its counts name.
			cmd = brokerRun(state, ws, wire.ProfileShort, []string{"--json"}, py, "-c", printFile, "big")
			cmd.Stderr = &errb
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("broker run --json: %v\n%s", err, errb.String())
			}
			var j struct{ Stdout view.Stream }
			if err := json.Unmarshal(raw, &j); err != nil {
				t.Fatalf("%v\n%s", err, raw)
			}
			s := j.Stdout
			h, tl := s.TextHeadBytes, s.TextTailBytes
			wantText := want[:h] + fmt.Sprintf("\n[… %d bytes omitted …]\n", size-h-tl) + want[size-tl:]
			if s.ObservedBytes != size || s.RedactedBytes != size || h == 0 || tl == 0 || h+tl >= size ||
				s.Text != wantText || s.RetainedHeadBytes != 65536 || s.RetainedBytes != 131072 || !s.Truncated {
				t.Fatalf("--json stdout counts %+v; text (%d chars) is not head %d + marker + tail %d", func() any {
					c := s
					c.Text = ""
					return c
				}(), len(s.Text), h, tl)
			}

			// A small action's output is retained and shown whole.
			cmd = brokerRun(state, ws, wire.ProfileShort, nil, py, "-c", "print('small')")
			errb.Reset()
			cmd.Stderr = &errb
			if o, err := cmd.Output(); err != nil || string(o) != "small\n" || strings.Contains(errb.String(), "retained for the receipt") {
				t.Fatalf("small run: %q %v\n%s", o, err, errb.String())
			}
			m = handleRE.FindStringSubmatch(errb.String())
			checkOutputCommand(t, state, m[1], "small\n", 6, 0)
		})
	}
}

// checkOutputCommand runs `broker output HANDLE --stream stdout` and its
// --json twin and requires the retained head and tail of want, with the
// marker between them when they are not all of it.
func checkOutputCommand(t *testing.T, state, handle, want string, head, tail int) {
	t.Helper()
	cmd := exec.Command(bins.broker, "output", handle, "--stream", "stdout", "--state", state)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("broker output: %v\n%s", err, errb.String())
	}
	omitted := len(want) - head - tail
	expect := want
	if omitted > 0 {
		expect = want[:head] + fmt.Sprintf("\n[… %d bytes omitted (retention_limit) …]\n", omitted) + want[len(want)-tail:]
	}
	if string(got) != expect {
		t.Fatalf("broker output printed %d bytes, want head %d + marker + tail %d (%d bytes)\n%s", len(got), head, tail, len(expect), errb.String())
	}
	note := fmt.Sprintf("warrant: stdout of %s: head %d + tail %d of %d bytes retained", handle, head, tail, len(want))
	if !strings.Contains(errb.String(), note) {
		t.Fatalf("broker output's note, want %q:\n%s", note, errb.String())
	}
	cmd = exec.Command(bins.broker, "output", handle, "--stream", "stdout", "--json", "--state", state)
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("broker output --json: %v", err)
	}
	var j struct {
		Streams []struct {
			Stream  string
			Text    string
			Head    int `json:"retained_head_bytes"`
			Tail    int `json:"retained_tail_bytes"`
			Omitted int `json:"omitted_bytes"`
		}
	}
	if err := json.Unmarshal(raw, &j); err != nil || len(j.Streams) != 1 {
		t.Fatalf("broker output --json: %v\n%s", err, raw)
	}
	if s := j.Streams[0]; s.Stream != "stdout" || s.Text != expect || s.Head != head || s.Tail != tail || s.Omitted != omitted {
		t.Fatalf("broker output --json: %s %d+%d omitted %d, text equal %v", s.Stream, s.Head, s.Tail, s.Omitted, s.Text == expect)
	}
}

// TestFollowNeverBlocksTheAction: a follower that stops reading holds up
// nothing, and loses nothing. The test's follower blocks on the first
// chunk until the action (8 MiB of output) has ended; the broker then
// sends it every byte, in order, from the action's spill.
func TestFollowNeverBlocksTheAction(t *testing.T) {
	d := shared(t)
	a := d.newAgent(t)
	const size = 8 << 20
	h := a.Start(a.request(wire.ProfileShort, python(t), "-c", fmt.Sprintf("import sys; sys.stdout.write('y'*%d)", size)), 1)
	ended := make(chan *wire.Result, 1)
	var data, gap uint64
	st, err := d.dial().Follow(context.Background(), &wire.Follow{Handle: h}, func(c *wire.OutputChunk) {
		if c.Stream == 0 {
			return
		}
		if data == 0 && gap == 0 {
			ended <- a.End(h) // the action ends while this follower reads nothing
		}
		if c.Offset != data+gap {
			t.Errorf("a chunk at offset %d after %d bytes", c.Offset, data+gap)
		}
		data += uint64(len(c.Data))
		gap += c.NotStreamed
	})
	if err != nil {
		t.Fatal(err)
	}
	res := <-ended
	if res.Outcome != wire.Exited || st.State != wire.StateTerminal || st.Result.Stdout.RedactedBytes != size {
		t.Fatalf("result %+v, final status %+v", res, st)
	}
	if data != size || gap != 0 {
		t.Fatalf("streamed %d, not streamed %d; the action wrote %d", data, gap, size)
	}
}

// drawOnPTY runs cmd with stdout and stderr on a new pseudo-terminal, waits
// for it and returns all it drew. Whenever more is drawn, until is called
// with everything so far; once it returns true, then is called, once.
func drawOnPTY(t *testing.T, cmd *exec.Cmd, until func(drawn string) bool, then func(drawn string)) (string, error) {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	cmd.Stdout, cmd.Stderr = slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the master reads EIO once the command's copies close
	var drawn bytes.Buffer
	buf := make([]byte, 4096)
	triggered := until == nil
	for {
		n, err := master.Read(buf)
		drawn.Write(buf[:n])
		if !triggered && until(drawn.String()) {
			triggered = true
			then(drawn.String())
		}
		if err != nil {
			break
		}
	}
	return drawn.String(), cmd.Wait()
}

var progressRE = regexp.MustCompile(`\r\x1b\[Kwarrant: running a-[0-9a-f]+ · [0-9.]+s · (\d+) bytes of output`)

// TestBrokerRunProgressLine: on a terminal, `broker run` keeps one line
// saying it is running, for how long and how many bytes it has seen,
// redrawn in place; it is erased before the summary. With --json, or off
// a terminal (TestBrokerRunOutputAgrees), there is none.
func TestBrokerRunProgressLine(t *testing.T) {
	py := python(t)
	state, ws := shared(t).State, workspace(t)
	cmd := brokerRun(state, ws, wire.ProfileShort, nil, py, "-c", waitForGo)
	drawn, err := drawOnPTY(t, cmd, func(drawn string) bool {
		m := progressRE.FindAllStringSubmatch(drawn, -1)
		return len(m) >= 2 && m[len(m)-1][1] == "6" // redrawn, after "ready\n"
	}, func(string) { os.WriteFile(filepath.Join(ws, "go"), nil, 0o644) })
	if err != nil {
		t.Fatalf("broker run: %v\n%q", err, drawn)
	}
	last := progressRE.FindAllStringIndex(drawn, -1)
	if len(last) < 2 {
		t.Fatalf("no progress line redrawn:\n%q", drawn)
	}
	rest := drawn[last[len(last)-1][1]:]
	// The line is erased before anything else is printed, and never after
	// the summary.
	if !strings.HasPrefix(rest, "\r\x1b[K") || !strings.Contains(drawn, "\r\x1b[Kafter go\r\n") ||
		!strings.Contains(rest, "warrant: exited (exit 0)") ||
		strings.Contains(rest[strings.Index(rest, "warrant: exited"):], "\x1b[K") {
		t.Fatalf("after the last progress line:\n%q", rest)
	}

	os.Remove(filepath.Join(ws, "go"))
	cmd = brokerRun(state, ws, wire.ProfileShort, []string{"--json"}, py, "-c", "import time; time.sleep(1.5)")
	drawn, err = drawOnPTY(t, cmd, nil, nil)
	if err != nil || strings.Contains(drawn, "\x1b[K") || strings.Contains(drawn, "warrant: running") {
		t.Fatalf("--json on a terminal drew a progress line (%v):\n%q", err, drawn)
	}
}

// TestBrokerRunInterruptWhileFollowing: SIGINT to `broker run` while it
// prints its action's output live cancels the action and keeps following
// it to its end (cancel is not abandon): exit 130, cancelled_reaped.
func TestBrokerRunInterruptWhileFollowing(t *testing.T) {
	py := python(t)
	for _, r := range brokerRunners {
		t.Run(r.name, func(t *testing.T) {
			cmd := brokerRun(r.state(t), workspace(t), wire.ProfileShort, nil, py, "-c", waitForGo)
			rd, errb := startPiped(t, cmd)
			expectReady(t, cmd, rd, errb)
			cmd.Process.Signal(syscall.SIGINT)
			io.Copy(io.Discard, rd)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(errb.String(), "warrant: cancelled_reaped") {
				t.Fatalf("after SIGINT: exit %d\n%s", code, errb.String())
			}
		})
	}
}

// TestBrokerRunSecondInterrupt: a second interrupt while `broker run`
// waits for its cancelled action to end (with --json), or follows its
// output to the end (without), stops at once: exit 123, the outcome
// unknown here, saying so. The action is not abandoned by the broker:
// its target, which survives SIGTERM, is killed at the end of the grace,
// and the action ends cancelled_reaped.
func TestBrokerRunSecondInterrupt(t *testing.T) {
	py := python(t)
	t.Run("json", func(t *testing.T) { secondInterrupt(t, py, []string{"--json"}) })
	t.Run("following", func(t *testing.T) { secondInterrupt(t, py, nil) })
}

func secondInterrupt(t *testing.T, py string, flags []string) {
	state, ws := shared(t).State, workspace(t)
	cmd := brokerRun(state, ws, wire.ProfileShort, flags, py, "-c", `
import os, signal, time
signal.signal(signal.SIGTERM, lambda *_: open("termed", "w").close())
open("started", "w").close()
time.sleep(60)
`)
	var out bytes.Buffer
	errb := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := func(format string, args ...any) {
		t.Helper()
		cmd.Process.Kill()
		<-done
		t.Fatalf(format+"; stderr:\n%s", append(args, errb)...)
	}
	// The first interrupt's cancel reaches the target as SIGTERM; the
	// second listener is in place before the cancel is sent.
	for _, marker := range []string{"started", "termed"} {
		deadline := time.Now().Add(daemonSafety)
		for _, err := os.Stat(filepath.Join(ws, marker)); err != nil; _, err = os.Stat(filepath.Join(ws, marker)) {
			select {
			case err := <-done:
				t.Fatalf("broker run ended (%v) before the target wrote %q; stderr:\n%s", err, marker, errb)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				stopped("the target never wrote %q", marker)
			}
		}
		cmd.Process.Signal(syscall.SIGINT)
	}
	select {
	case <-done:
	case <-time.After(hangGuard):
		stopped("broker run still waited %s after a second SIGINT", hangGuard)
	}
	if code := cmd.ProcessState.ExitCode(); code != 123 {
		t.Fatalf("after a second SIGINT: exit %d, want 123; stderr:\n%s", code, errb)
	}
	// The cancel's answer may not have been read when the second came.
	said := func(msg string) bool {
		return strings.Contains(msg, "interrupted again") || strings.Contains(msg, "interrupted, and the cancel failed")
	}
	var handle string
	if flags == nil {
		m := handleRE.FindStringSubmatch(errb.String())
		if m == nil || !said(errb.String()) || !strings.Contains(errb.String(), "outcome is unknown here") {
			t.Fatalf("after a second SIGINT, stderr:\n%s", errb)
		}
		handle = m[1]
	} else {
		o := decodeRun(t, &out)
		if o.Outcome != "unknown" || o.Error == nil || o.Handle == nil || !said(o.Error.Message) {
			t.Fatalf("after a second SIGINT: %s", out.String())
		}
		handle = *o.Handle
	}
	wait := exec.Command(bins.broker, "wait", "--json", "--state", state, "--timeout", "30s", handle)
	got, err := wait.Output()
	if err != nil || !strings.Contains(string(got), `"outcome": "cancelled_reaped"`) {
		t.Fatalf("broker wait %s: %v\n%s", handle, err, got)
	}
}

// TestBrokerRunSlowReaderGetsEveryByte: `broker run` whose stdout is
// not read holds up neither the action nor the broker, and loses
// nothing: the test reads nothing until the target has written 8 MiB
// and said so in a file, then reads every byte, with no gap marked.
func TestBrokerRunSlowReaderGetsEveryByte(t *testing.T) {
	py := python(t)
	const size = 8 << 20
	for _, r := range brokerRunners {
		t.Run(r.name, func(t *testing.T) {
			ws := workspace(t)
			cmd := brokerRun(r.state(t), ws, wire.ProfileShort, nil, py, "-c",
				fmt.Sprintf("import sys; sys.stdout.write('y'*%d); sys.stdout.flush(); open('done', 'w').close()", size))
			out, errb := startPiped(t, cmd)
			deadline := time.Now().Add(daemonSafety)
			for _, err := os.Stat(filepath.Join(ws, "done")); err != nil; _, err = os.Stat(filepath.Join(ws, "done")) {
				if time.Now().After(deadline) {
					t.Fatalf("the target never finished writing while its output was not read\n%s", errb.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			got, _ := io.ReadAll(out)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("broker run: %v\n%s", err, errb.String())
			}
			if len(got) != size || bytes.Count(got, []byte("y")) != size ||
				!strings.Contains(errb.String(), "stdout: printed live 8388608 of 8388608 bytes;") {
				t.Fatalf("printed %d bytes (%d of them the target's); the target wrote %d; summary:\n%s", len(got), bytes.Count(got, []byte("y")), size, errb.String())
			}
		})
	}
}

// TestBrokerRunWaitingLine: waiting for an approval decided elsewhere,
// `broker run` on a terminal says so on its progress line, with the
// request it waits for; once approved from another process, it runs.
func TestBrokerRunWaitingLine(t *testing.T) {
	d := shared(t)
	ws := workspace(t)
	cmd := brokerRun(d.State, ws, wire.ProfileShort, nil, "/bin/echo", "approved elsewhere")
	cmd.Args = slices.DeleteFunc(cmd.Args, func(a string) bool { return a == "--approve" })
	waiting := regexp.MustCompile(`\r\x1b\[Kwarrant: waiting for approval of (ar-[0-9a-f]+) · [0-9.]+s · 0 bytes of output`)
	approved := false
	drawn, err := drawOnPTY(t, cmd, func(drawn string) bool { return len(waiting.FindAllString(drawn, -1)) >= 2 }, func(drawn string) {
		id := waiting.FindStringSubmatch(drawn)[1]
		if _, code := d.CLI("approve", id); code == 0 {
			approved = true
		}
	})
	if err != nil || !approved {
		t.Fatalf("broker run: %v (approved %v)\n%q", err, approved, drawn)
	}
	last := waiting.FindAllStringIndex(drawn, -1)
	rest := drawn[last[len(last)-1][1]:]
	if !strings.HasPrefix(rest, "\r\x1b[K") || !strings.Contains(rest, "approved elsewhere\r\n") ||
		!strings.Contains(rest, "warrant: exited (exit 0)") {
		t.Fatalf("after the last waiting line:\n%q", rest)
	}
}
