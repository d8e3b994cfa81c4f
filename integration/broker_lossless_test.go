//go:build linux

package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"warrant/receipt"
	"warrant/wire"
)

// bursts is a target that writes argv[1] bursts of argv[2] bytes of
// numbered lines (any byte range of them is recognisable), pausing 10 ms
// after each.
const bursts = `
import sys, time
n, size = int(sys.argv[1]), int(sys.argv[2])
w = sys.stdout.buffer
line = 0
for b in range(n):
    out = bytearray()
    while len(out) < size:
        out += b"burst %04d line %09d %s\n" % (b, line, b"y" * 40)
        line += 1
    w.write(out[:size])
    w.flush()
    time.sleep(0.01)
`

// slowCopy copies r to its end into w in 64 KiB reads, pausing pause
// after every every bytes, and returns how many it copied.
func slowCopy(w io.Writer, r io.Reader, every int, pause time.Duration) int {
	buf := make([]byte, 64<<10)
	n, next := 0, every
	for {
		k, err := r.Read(buf)
		w.Write(buf[:k])
		if n += k; n >= next {
			time.Sleep(pause)
			next += every
		}
		if err != nil {
			return n
		}
	}
}

// receiptAt is the verified receipt of an action (handle or receipt id)
// in the log of state, read by `broker receipts show --json`, daemon or
// not.
func receiptAt(t *testing.T, state, id string) *receipt.Receipt {
	t.Helper()
	out, err := exec.Command(bins.broker, "receipts", "show", id, "--json", "--state", state).Output()
	var shown struct {
		Verified bool             `json:"verified"`
		Receipt  *receipt.Receipt `json:"receipt"`
	}
	if err != nil || json.Unmarshal(out, &shown) != nil || !shown.Verified || shown.Receipt == nil {
		t.Fatalf("broker receipts show %s: %v\n%s", id, err, out)
	}
	return shown.Receipt
}

// stdoutEvidence is a receipt's evidence of stdout.
func stdoutEvidence(t *testing.T, rc *receipt.Receipt) *receipt.StreamEvidence {
	t.Helper()
	for i := range rc.Streams {
		if rc.Streams[i].Stream == receipt.Stdout {
			return &rc.Streams[i]
		}
	}
	t.Fatalf("receipt %s has no stdout evidence", rc.ID)
	return nil
}

// TestBrokerRunPrintsEveryByte: a target writes 100 MB in bursts to
// `broker run`, whose stdout is a pipe the test reads with a pause after
// every 4 MiB and one of 2 s halfway, far slower than the target writes.
// What `broker run` printed is every byte of the redacted stream, in
// order: its SHA-256 is the receipt's — against the daemon and the
// embedded broker alike — and nothing was marked as not streamed.
func TestBrokerRunPrintsEveryByte(t *testing.T) {
	py := python(t)
	const n, size = 50, 2_000_000
	for _, r := range brokerRunners {
		t.Run(r.name, func(t *testing.T) {
			state := r.state(t)
			cmd := brokerRun(state, workspace(t), wire.ProfileStandard, nil, py, "-c", bursts, fmt.Sprint(n), fmt.Sprint(size))
			out, errb := startPiped(t, cmd)
			half := io.LimitReader(out, n*size/2)
			h := sha256.New()
			got := slowCopy(h, half, 4<<20, 100*time.Millisecond)
			time.Sleep(2 * time.Second)
			got += slowCopy(h, out, 4<<20, 100*time.Millisecond)
			err := cmd.Wait()
			sum := hex.EncodeToString(h.Sum(nil))
			if err != nil {
				t.Fatalf("broker run: %v\n%s", err, errb.String())
			}
			m := handleRE.FindStringSubmatch(errb.String())
			if m == nil {
				t.Fatalf("no handle in:\n%s", errb.String())
			}
			ev := stdoutEvidence(t, receiptAt(t, state, m[1]))
			if ev.RedactedBytes != n*size || uint64(got) != ev.RedactedBytes || sum != ev.RedactedSHA256 ||
				strings.Contains(errb.String(), "not streamed") {
				t.Fatalf("printed %d bytes, SHA-256 %s; the receipt's redacted stream is %d bytes, SHA-256 %s\n%s",
					got, sum, ev.RedactedBytes, ev.RedactedSHA256, tail(errb.String()))
			}
			t.Logf("printed all %d bytes, SHA-256 %s", got, sum)
		})
	}
}

// actionOfSession is the handle of the one action of session, from
// `broker actions --json`.
func actionOfSession(t *testing.T, d *brokerd, session string) string {
	t.Helper()
	out, _ := d.CLI("actions", "--json", "--limit", "50")
	var page struct {
		Items []struct {
			Handle  string  `json:"handle"`
			Session *string `json:"session"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("broker actions --json: %v\n%s", err, out)
	}
	for _, it := range page.Items {
		if it.Session != nil && *it.Session == session {
			return it.Handle
		}
	}
	t.Fatalf("no action of session %s in:\n%s", session, out)
	return ""
}

// TestKilledFollowerGetsItsMissedRanges: `broker run` is killed (SIGKILL)
// after printing part of a 30 MB output; the action goes on and ends. The
// bytes it did not print are those from the offset it reached, and
// `broker output HANDLE --stream stdout --from OFFSET` prints exactly them
// from the action's spill: what was printed and what was fetched are the
// receipt's redacted stream. Once fetched the spill is gone, and the same
// command says so and falls back to the receipt's head and tail.
func TestKilledFollowerGetsItsMissedRanges(t *testing.T) {
	py := python(t)
	d := shared(t)
	const n, size = 30, 1_000_000
	cmd := brokerRun(d.State, workspace(t), wire.ProfileStandard, nil, py, "-c", bursts+"\ntime.sleep(0.5)", fmt.Sprint(n), fmt.Sprint(size))
	session := cmd.Args[slices.Index(cmd.Args, "--session")+1]
	out, errb := startPiped(t, cmd)
	var printed bytes.Buffer
	if _, err := io.CopyN(&printed, out, 3<<20); err != nil {
		t.Fatalf("read 3 MiB of broker run's output: %v\n%s", err, errb.String())
	}
	cmd.Process.Kill()
	io.Copy(&printed, out) // what it wrote before it died
	cmd.Wait()
	handle := actionOfSession(t, d, session)
	a := d.newAgent(t)
	if res := a.End(handle); res.Outcome != wire.Exited {
		t.Fatalf("the action did not go on to its end without its follower: %+v", res)
	}
	ev := stdoutEvidence(t, d.Receipt(handle))
	from := printed.Len()
	if uint64(from) >= ev.RedactedBytes {
		t.Fatalf("the killed follower printed %d of %d bytes: nothing was missed", from, ev.RedactedBytes)
	}
	fetch := exec.Command(bins.broker, "output", handle, "--stream", "stdout", "--from", fmt.Sprint(from), "--state", d.State)
	var ferr bytes.Buffer
	fetch.Stderr = &ferr
	rest, err := fetch.Output()
	if err != nil {
		t.Fatalf("broker output --from %d: %v\n%s", from, err, ferr.String())
	}
	whole := sha256.Sum256(append(printed.Bytes(), rest...))
	if uint64(from+len(rest)) != ev.RedactedBytes || hex.EncodeToString(whole[:]) != ev.RedactedSHA256 {
		t.Fatalf("printed %d + fetched %d bytes; the receipt's stream is %d bytes (SHA-256 equal: %v)\n%s",
			from, len(rest), ev.RedactedBytes, hex.EncodeToString(whole[:]) == ev.RedactedSHA256, ferr.String())
	}
	t.Logf("killed after %d bytes; fetched the other %d from the spill: %s", from, len(rest), strings.TrimSpace(ferr.String()))

	// The spill went once its bytes were fetched: the receipt's head and
	// tail are all there is, and the command says which bytes it lacks.
	fetch = exec.Command(bins.broker, "output", handle, "--stream", "stdout", "--from", fmt.Sprint(from), "--state", d.State)
	ferr.Reset()
	fetch.Stderr = &ferr
	again, err := fetch.Output()
	retain := int(ev.Tail.End - ev.Tail.Start)
	gone := fmt.Sprintf("bytes %d–%d of stdout are no longer held", from, ev.Tail.Start)
	if err != nil || !bytes.Equal(again, rest[len(rest)-retain:]) || !strings.Contains(ferr.String(), gone) {
		t.Fatalf("after the spill went: %v, %d bytes (want the receipt's tail, %d); stderr (want %q):\n%s",
			err, len(again), retain, gone, ferr.String())
	}
	if _, err := os.Stat(d.State + "/output/" + handle); !os.IsNotExist(err) {
		t.Fatalf("the action's spill is still there once its bytes were fetched: %v", err)
	}
	if out, code := d.CLI("output", handle, "--from", "5"); code != 2 {
		t.Fatalf("--from without --stream: exit %d (want 2, a usage error)\n%s", code, out)
	}
}

// TestFollowerLeavingIsNoInternalError: a follower that goes away while
// its action still writes (a killed `broker run`) is a normal event: the
// daemon keeps serving and writes no "internal error" (a Go error chain)
// to its log.
func TestFollowerLeavingIsNoInternalError(t *testing.T) {
	py := python(t)
	d := startBroker(t, "")
	cmd := brokerRun(d.State, workspace(t), wire.ProfileStandard, nil, py, "-c", bursts+"\ntime.sleep(0.5)", "10", "1000000")
	session := cmd.Args[slices.Index(cmd.Args, "--session")+1]
	out, errb := startPiped(t, cmd)
	if _, err := io.CopyN(io.Discard, out, 1<<20); err != nil {
		t.Fatalf("read 1 MiB of broker run's output: %v\n%s", err, errb.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	handle := actionOfSession(t, d, session)
	if res := d.newAgent(t).End(handle); res.Outcome != wire.Exited {
		t.Fatalf("the action did not go on to its end without its follower: %+v", res)
	}
	if log := d.log.String(); strings.Contains(log, "internal error") {
		t.Fatalf("the daemon logged a follower's leaving as an internal error:\n%s", log)
	}
}
