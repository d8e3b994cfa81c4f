package cli

import (
	"context"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"warrant/broker/client"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runServe runs the daemon in the foreground until SIGINT or SIGTERM.
func runServe(e *env, args []string) error {
	o := brokerOptions{warm: true}
	e.fs.Var(&o.readPaths, "read-path", "an extra read+execute path for every policy (repeatable)")
	e.fs.StringVar(&o.launcher, "launcher", "", "the launcher binary (default $WARRANT_LAUNCHER or beside this binary)")
	e.fs.StringVar(&o.witness, "witness", "", "copy every signed checkpoint to an append-only file in this directory, outside the state directory")
	e.brokerFlags(&o)
	if _, err := e.parse(args, 0); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d, err := openDaemon(ctx, e, o, e.stderr, nil)
	if err != nil {
		return err
	}
	defer d.close()
	agent, operator := client.SocketPaths(e.state)
	fmt.Fprintf(e.stderr, "broker: serving %s and %s\n", agent, operator)
	return d.b.Serve(ctx)
}
