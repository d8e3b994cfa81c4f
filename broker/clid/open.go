package clid

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"warrant/broker/cli"

	"warrant/broker"
	"warrant/broker/internal/follow"
	"warrant/broker/internal/probe"
	"warrant/broker/runner"
	"warrant/internal/probeprog"
	"warrant/receipt"
	"warrant/wire"
)

// launcherPath finds the launcher: --launcher, else $WARRANT_LAUNCHER,
// else "launcher" beside this broker binary (how `make build` lays them
// out). A launcher that is not there is SANDBOX_UNAVAILABLE: nothing can
// run without it.
func launcherPath(flagValue string) (string, error) {
	from, p := "--launcher", flagValue
	if p == "" {
		from, p = "WARRANT_LAUNCHER", os.Getenv("WARRANT_LAUNCHER")
	}
	if p == "" {
		self, err := os.Executable()
		if err != nil {
			return "", wire.Explain(wire.CodeSandboxUnavailable, err, "cannot find the launcher: pass --launcher PATH or set WARRANT_LAUNCHER")
		}
		from, p = "beside "+self, filepath.Join(filepath.Dir(self), "launcher")
	}
	p, err := filepath.Abs(p)
	if err == nil {
		_, err = os.Stat(p)
	}
	if err != nil {
		return "", wire.Explain(wire.CodeSandboxUnavailable, err, "there is no launcher at %s (%s): build it with `make build`, "+
			"which puts bin/launcher beside bin/broker, or pass --launcher PATH or set WARRANT_LAUNCHER", p, from)
	}
	return p, nil
}

// daemon is an open broker with its runner and the state lock both were
// made under.
type daemon struct {
	b    *broker.Broker
	r    *runner.Runner
	lock *broker.StateLock
}

// openDaemon opens the broker on the state directory with a runner that
// executes through the pinned launcher. live, when set, receives each
// action's redacted output as it is released. Opening decides the
// capability state: the capability probe runs unless a verified report
// for this host, launcher, policy and binary is stored.
func openDaemon(ctx context.Context, e *cli.Env, o cli.BrokerOptions, logw io.Writer,
	live func(string, receipt.StreamName, []byte)) (*daemon, error) {
	return openBroker(ctx, e, o, logw, live, false)
}

// openBroker is openDaemon; reprobe runs the probe even when a verified
// report is stored.
//
// The state lock comes first: the runner makes this state directory's
// cgroup directories (runner.New), which every broker of the directory
// shares by name and which the runner's Close removes, so a broker that
// loses the lock to a running one must make and remove nothing. The lock
// is released last, once the runner and the broker are closed.
func openBroker(ctx context.Context, e *cli.Env, o cli.BrokerOptions, logw io.Writer,
	live func(string, receipt.StreamName, []byte), reprobe bool) (*daemon, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the probe program: %w", err)
	}
	path, err := launcherPath(o.Launcher)
	if err != nil {
		return nil, err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(logw, "broker: "+format+"\n", a...) }
	abs, err := filepath.Abs(e.State)
	if err != nil {
		return nil, err
	}
	lock, err := broker.LockState(abs)
	if err != nil {
		return nil, err
	}
	scope := sha256.Sum256([]byte(abs))
	hub := follow.New() // the agent socket's Follow reads what the runner publishes here
	publish := func(handle string, s receipt.StreamName, p []byte) {
		hub.Publish(handle, s.Wire(), p)
		if live != nil {
			live(handle, s, p)
		}
	}
	r, err := runner.New(runner.Options{Launcher: path, Live: publish, Scope: hex.EncodeToString(scope[:8]), Warm: o.Warm,
		WriteHints: o.WriteHints}, logf)
	if err != nil {
		lock.Release()
		return nil, err
	}
	b, err := broker.Open(ctx, broker.Config{StateDir: abs, Lock: lock, ExtraReadPaths: o.ReadPaths,
		Output: hub, Environ: os.Environ(), Env: o.Env, CargoTargetCache: o.CargoTarget, Logf: logf, Executor: r, Reprobe: reprobe, Witness: o.Witness,
		ProbeTarget: []string{self, "probe", probeprog.Arg}, Binaries: []string{self, path}})
	if err != nil {
		r.Close()
		lock.Release()
		return nil, err
	}
	c := b.Capability()
	logf("capability %s (probed %s in %d ms)", c.State, c.At.Format(time.RFC3339), c.DurationMS)
	if c.State != wire.Verified {
		logf("every submit is refused with SANDBOX_UNAVAILABLE: %s; fix: %s; see `broker probe`", c.Reason, strings.Join(c.Hints, "; "))
	} else if why, _ := c.Unoffered(probe.FeatureEgress); why != "" {
		logf("every request and approval with an egress grant is refused with SANDBOX_UNAVAILABLE: %s; see `broker probe`", why)
	}
	return &daemon{b: b, r: r, lock: lock}, nil
}

// close waits for the actions in flight, closes the runner (removing the
// cgroup directories) and the broker, then releases the state lock.
func (d *daemon) close() {
	d.r.Close()
	d.b.Close()
	d.lock.Release()
}
