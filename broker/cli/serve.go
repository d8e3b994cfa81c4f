package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"warrant/broker"
	"warrant/broker/client"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runServe runs the daemon in the foreground until SIGINT or SIGTERM.
func runServe(e *env, args []string) error {
	var extras stringList
	e.fs.Var(&extras, "read-path", "an extra read+execute path for every policy (repeatable)")
	if _, err := e.parse(args, 0); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logf := func(format string, a ...any) { fmt.Fprintf(e.stderr, "broker: "+format+"\n", a...) }
	b, err := broker.Open(ctx, broker.Config{StateDir: e.state, ExtraReadPaths: extras, Environ: os.Environ(), Logf: logf})
	if err != nil {
		return err
	}
	defer b.Close()
	agent, operator := client.SocketPaths(e.state)
	logf("serving %s and %s", agent, operator)
	return b.Serve(ctx)
}
