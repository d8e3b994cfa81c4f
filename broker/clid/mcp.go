package clid

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"warrant/broker/cli"

	"warrant/broker/mcp"
)

// runMCP serves the MCP server on stdin and stdout (broker/mcp,
// docs/agents.md): an agent client of the daemon on the state directory,
// or of an embedded broker, opened as `broker run` opens one, that lives
// as long as the connection. Stdout carries protocol frames only; this
// command writes its own lines to stderr.
func runMCP(e *cli.Env, args []string) error {
	cfg := mcp.Config{Log: e.Stderr}
	var o cli.BrokerOptions
	e.Flags.StringVar(&cfg.Workspace, "workspace", "", "the workspace every action runs in (default: the current directory)")
	e.Flags.StringVar(&cfg.Session, "session", "", "the agent session (default: one per MCP connection)")
	e.Flags.StringVar(&cfg.Goal, "goal", "", "the goal (default: the default goal)")
	e.Flags.StringVar(&o.Launcher, "launcher", "", "the launcher, when no daemon answers (default $WARRANT_LAUNCHER or beside this binary)")
	if _, err := e.Parse(args, 0); err != nil {
		return err
	}
	ws, err := workspaceDir(cfg.Workspace)
	if err != nil {
		return err
	}
	if cfg.StateDir, err = filepath.Abs(e.State); err != nil {
		return err
	}
	cfg.Workspace = ws
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	meter := &mcp.Meter{}
	cl, em, err := connect(ctx, e, o, meter.Live)
	if err != nil {
		return err
	}
	defer cl.Close()
	if em != nil {
		defer em.stop()
		cfg.Embedded, cfg.Meter = true, meter
		fmt.Fprintf(e.Stderr, "broker mcp: no daemon answers on %s: serving an embedded broker there until the client disconnects\n", cfg.StateDir)
	}
	cfg.Agent = &cl.Agent
	return mcp.ServeStream(ctx, cfg, os.Stdin, e.Stdout)
}

// workspaceDir is the workspace flag's directory (default: the current
// one), absolute with its symlinks resolved; the broker applies the
// workspace rules to it at every submit.
func workspaceDir(flagValue string) (string, error) {
	ws := flagValue
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		ws = wd
	}
	ws, err := filepath.Abs(ws)
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		return "", cli.UsageError{Msg: fmt.Sprintf("--workspace: %v", err)}
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return "", cli.UsageError{Msg: fmt.Sprintf("--workspace %s is not a directory", ws)}
	}
	return ws, nil
}
