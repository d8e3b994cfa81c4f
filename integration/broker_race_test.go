//go:build linux

package integration

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

// reader is the tool whose own directory the policy grants: it tries to
// read the marker (outside every grant) and prints what it got.
const reader = "#!/usr/bin/python3\nimport sys\ntry:\n    print('read ' + open(sys.argv[1]).read())\nexcept OSError as e:\n    print('denied', e.errno)\n"

// inSandboxRacer swaps the directory argv[1] (in its own workspace) for a
// symlink to / and back, argv[2] times, as fast as it can.
const inSandboxRacer = `
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
done = 0
for _ in range(n):
    try:
        os.rename(d, d + ".real")
        os.symlink("/", d)
        os.unlink(d)
        os.rename(d + ".real", d)
        done += 1
    except OSError:
        pass
print(done)
`

// TestBrokerPolicyPathSwapNeverGrantsMore: the directory holding an
// approved tool is granted to its actions. Racers — one on the host with
// renameat2(RENAME_EXCHANGE), one inside another action whose workspace
// holds that directory — swap it for a symlink to / thousands of times
// while the tool runs again and again. The launcher opens policy paths
// without following symlinks and grants one only if it is the pinned
// object, so no action ever reads the marker outside: each is refused or
// runs with the real directory alone.
func TestBrokerPolicyPathSwapNeverGrantsMore(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("skip: no /usr/bin/python3: %v", err)
	}
	d := shared(t)
	victim, racer := d.newAgent(t), d.newAgent(t)
	marker := filepath.Join(t.TempDir(), "marker")
	secret := "warrant-race-" + token(t)
	if err := os.WriteFile(marker, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(racer.WS, "tools")
	if err := os.Mkdir(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(tools, "reader")
	if err := os.WriteFile(tool, []byte(reader), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(racer.WS, "swap")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	req := victim.request(wire.ProfileShort, tool, marker)
	// Approved while nothing races; the first run is honest.
	if r := victim.End(victim.Start(req, 1000)); !strings.HasPrefix(r.Stdout.Text, "denied") {
		t.Fatalf("without a race the tool must be denied the marker: %q %+v", r.Stdout.Text, r.Error)
	}

	var exchanges atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the host racer
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Each state lasts about as long as a launch takes from binding
			// the executable (step 5) to granting its directory (step 8):
			// the interpreter's digest alone is milliseconds.
			if unix.Renameat2(unix.AT_FDCWD, tools, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) == nil {
				exchanges.Add(1)
			}
			time.Sleep(time.Duration(200+rand.IntN(1800)) * time.Microsecond)
		}
	}()
	inside := racer.Start(racer.request(wire.ProfileStandard, python(t), "-c", inSandboxRacer, tools, "2000"), 1)

	// The victim submits at least 60 times and until the host racer has
	// made 2000 exchanges, within daemonSafety. The bound is time, not a
	// count of submits: while the racers' interleaved renames leave the
	// tool's directory under another name, every submit is refused at
	// once, and under load 2000 such runs took 1.3 s, ending the loop
	// after 629 exchanges.
	ran, refused := 0, 0
	deadline := time.Now().Add(daemonSafety)
	for i := 0; i < 60 || exchanges.Load() < 2000; i++ {
		if time.Now().After(deadline) {
			break
		}
		s, err := victim.cl.Submit(victim.WS, req)
		if err != nil || s.Handle == "" {
			refused++ // not found, drift, or a new identity asking for approval
			continue
		}
		r := victim.End(s.Handle)
		if strings.Contains(r.Stdout.Text, secret) {
			t.Fatalf("run %d read the marker through a swapped policy path: %q", i, r.Stdout.Text)
		}
		if r.Outcome == wire.Exited {
			ran++
		} else {
			refused++
		}
	}
	close(stop)
	wg.Wait()
	ri := racer.End(inside)
	// Leave the directory in place whichever way the racers stopped.
	if fi, err := os.Lstat(tools); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		unix.Renameat2(unix.AT_FDCWD, tools, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
	}
	t.Logf("host exchanges %d, in-sandbox swaps %s; victim runs: %d ran, %d refused", exchanges.Load(), strings.TrimSpace(ri.Stdout.Text), ran, refused)
	if exchanges.Load() < 2000 {
		t.Fatalf("only %d exchanges happened: the race proves nothing", exchanges.Load())
	}
	if ri.Outcome != wire.Exited || strings.TrimSpace(ri.Stdout.Text) == "0" {
		t.Fatalf("the in-sandbox racer did not race: %s %q %q", ri.Outcome, ri.Stdout.Text, ri.Stderr.Text)
	}
}
