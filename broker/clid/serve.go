package clid

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"warrant/broker/cli"

	"warrant/broker/client"
)

// runServe runs the daemon in the foreground until SIGINT or SIGTERM.
func runServe(e *cli.Env, args []string) error {
	o := cli.BrokerOptions{Warm: true}
	e.Flags.Var(&o.ReadPaths, "read-path", "an extra read+execute path for every policy (repeatable)")
	e.Flags.StringVar(&o.Launcher, "launcher", "", "the launcher binary (default $WARRANT_LAUNCHER or beside this binary)")
	e.Flags.StringVar(&o.Witness, "witness", "", "copy every signed checkpoint to an append-only file in this directory, outside the state directory")
	e.BrokerFlags(&o)
	if _, err := e.Parse(args, 0); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d, err := openDaemon(ctx, e, o, e.Stderr, nil)
	if err != nil {
		return err
	}
	defer d.close()
	agent, operator := client.SocketPaths(e.State)
	fmt.Fprintf(e.Stderr, "broker: serving %s and %s\n", agent, operator)
	return d.b.Serve(ctx)
}
