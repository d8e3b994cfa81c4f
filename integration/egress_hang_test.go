//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEgressConnectCannotHangTheBroker runs testdata/egress/hang.c: a
// blocking connect to the proxy whose SYNs the proxy's listener drops (a
// TCP_MD5SIG key for its address) for hours (TCP_SYNCNT=127). The
// broker's connect of it is bounded: the target's connect fails
// (ETIMEDOUT), and `broker run` finishes with a receipt, instead of its
// notification loop and the action's teardown waiting for the kernel.
func TestEgressConnectCannotHangTheBroker(t *testing.T) {
	b := rootEgressBench(t)
	gcc := hostTool(t, "gcc")
	granted := listen(t, "tcp4", "127.0.0.1:0")
	src, err := filepath.Abs(filepath.Join("testdata", "egress", "hang.c"))
	if err != nil {
		t.Fatal(err)
	}
	hostRun(t, b.ws, nil, gcc, "-O2", "-Wall", "-pthread", "-o", filepath.Join(b.ws, "hang"), src)
	b.ready()
	done := make(chan *egressRun, 1)
	go func() {
		out, code := b.cli(append(b.runArgs([]string{fmt.Sprintf("127.0.0.1:%d", portOf(granted))}, "--json", "--"), "./hang")...)
		done <- &egressRun{raw: string(out), code: code}
	}()
	var j *egressRun
	select {
	case j = <-done:
	case <-time.After(3 * time.Minute): // the bound is seconds; this is only the test's patience
		t.Fatal("broker run has not finished 3 minutes after a target whose connect never completes")
	}
	if err := json.Unmarshal([]byte(j.raw), j); err != nil || j.ReceiptID == nil {
		t.Fatalf("broker run --json: exit %d, %v, no receipt\n%s", j.code, err, j.raw)
	}
	j.ok(t)
	if out := j.Stdout.Text; strings.Contains(out, "hang_setsockopt") {
		t.Skipf("no TCP_MD5SIG here: %s", out)
	} else if !strings.Contains(out, "hang_connect ETIMEDOUT\n") {
		t.Errorf("the target's connect: want ETIMEDOUT:\n%s", out)
	}
	if eg, _ := b.receipt(*j.ReceiptID); eg == nil {
		t.Error("the receipt has no egress record")
	}
	requireNoConnection(t, granted)
}
