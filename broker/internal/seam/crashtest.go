//go:build warrant_crashtest

package seam

// THIS FILE IS ONLY IN BINARIES BUILT WITH -tags warrant_crashtest, which
// only the crash-consistency test does. It lets that test stop a real
// daemon inside a transaction and SIGKILL it there.
//
// WARRANT_CRASHTEST_PAUSE=stage:n makes the n-th pass through the named
// point print "warrant-crashtest: paused at stage" to stderr and block
// forever. The executor it installs starts nothing: it appends each
// handle to <state>/crashtest-started and leaves the action in flight, as
// a running launch would be.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"warrant/broker/runner"
	"warrant/wire"
)

func init() {
	spec := os.Getenv("WARRANT_CRASHTEST_PAUSE")
	i := strings.LastIndexByte(spec, ':')
	if i < 0 {
		i = len(spec)
	}
	stage := spec[:i]
	n, _ := strconv.Atoi(strings.TrimPrefix(spec[i:], ":"))
	var mu sync.Mutex
	seen := 0
	crashPause = func(s string) {
		if s != stage {
			return
		}
		mu.Lock()
		seen++
		hit := seen == n
		mu.Unlock()
		if hit {
			fmt.Fprintf(os.Stderr, "warrant-crashtest: paused at %s\n", s)
			select {}
		}
	}
	crashExecutor = func(stateDir string) runner.Executor {
		return &crashtestRecorder{path: filepath.Join(stateDir, "crashtest-started")}
	}
}

type crashtestRecorder struct {
	mu   sync.Mutex
	path string
}

func (c *crashtestRecorder) Start(_ context.Context, l *runner.Launch, _ runner.Observer) error {
	l.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteString(l.Handle + "\n"); err != nil {
		return err
	}
	return f.Sync()
}

func (*crashtestRecorder) Cancel(string, string) wire.CancelResult { return wire.CancelRejected }
