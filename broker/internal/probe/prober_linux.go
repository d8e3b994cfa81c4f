package probe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"warrant/broker/lifecycle"
	"warrant/broker/runner"
	"warrant/internal/probeprog"
	"warrant/wire"
)

// proberSetup is what one prober's action adds to the default: its
// egress grant, files written into its scratch workspace first, and a
// change to its launch.
type proberSetup struct {
	egress []string
	fill   func(ws string) error
	launch func(*runner.Launch)
}

// proberRun prepares the prober who as an action in a fresh scratch
// workspace and runs it, as set says.
func proberRun(ctx context.Context, p Prober, s Setup, who string, set proberSetup) (lifecycle.Result, string, error) {
	ws, home, tmp := filepath.Join(s.Dir, "workspace"), filepath.Join(s.Dir, "home"), filepath.Join(s.Dir, "tmp")
	if err := os.RemoveAll(s.Dir); err != nil {
		return lifecycle.Result{}, "", fmt.Errorf("clear the probe directory: %w", err)
	}
	defer os.RemoveAll(s.Dir)
	for _, d := range []string{s.Dir, ws, home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return lifecycle.Result{}, "", fmt.Errorf("create probe directory: %w", err)
		}
	}
	if set.fill != nil {
		if err := set.fill(ws); err != nil {
			return lifecycle.Result{}, "", err
		}
	}
	plan := probeprog.Plan{Who: who}
	argv := append(append([]string{}, s.Target[1:]...), plan.Args()...)
	l, err := s.Prepare(&wire.Submit{Workspace: ws, Request: wire.ActionRequest{
		Executable: s.Target[0], Argv: argv, Cwd: ".", Profile: wire.ProfileShort, Egress: set.egress}}, nil, Bindings[0])
	if err != nil {
		return lifecycle.Result{}, "", err
	}
	defer l.Close()
	l.Handle, l.Home, l.Tmp = "probe-"+who+"-"+random("")[:12], home, tmp
	if set.launch != nil {
		set.launch(l)
	}
	var stdout, stderr capped
	run := p.Probe(ctx, l, &stdout, &stderr)
	return run, stdout.String() + "\n" + stderr.String(), nil
}
