package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"warrant/broker"
	"warrant/broker/client"
	"warrant/wire"
)

// Exit statuses.
const (
	exitOK           = 0
	exitFailed       = 1
	exitUsage        = 2
	exitVerifyFailed = 3 // `receipts verify`: the log was read and fails verification
)

type command struct {
	usage string
	run   func(e *env, args []string) error
}

var commands = map[string]command{
	"serve":     {"serve [--read-path DIR]... [--env NAME=VALUE]... [--cargo-target-cache] [--witness DIR] [--launcher PATH]", runServe},
	"probe":     {"probe [--launcher PATH] [--json]", runProbe},
	"approvals": {"approvals [--json]", runApprovals},
	"approve":   {"approve ID [--uses N] [--ttl D] [--json]", runApprove},
	"deny":      {"deny ID [--reason R]", runDeny},
	"leases":    {"leases [--json]", runLeases},
	"revoke":    {"revoke LEASE", runRevoke},
	"actions":   {"actions [--unknown] [--json]", runActions},
	"resolve":   {"resolve HANDLE success|failed|stop [--note N]", runResolve},
	"receipts":  {"receipts list|show ID|verify [--pubkey FILE] [--checkpoint FILE]|checkpoint|export [--format dsse-jsonl]|pubkey|prune --older-than D [--json]", runReceipts},
	"run":       {"run [--workspace DIR] [--cwd REL] [--profile P] [--session S] [--goal G] [--approve] [--call-id ID] [--launcher PATH] [--env NAME=VALUE]... [--cargo-target-cache] [--json] -- EXECUTABLE [ARG...]", runRun},
	"caches":    {"caches list|prune --older-than D|--all [--json]", runCaches},
	"status":    {"status [HANDLE] [--json]", runStatus},
	"wait":      {"wait HANDLE [--timeout D] [--json]", runWait},
	"cancel":    {"cancel HANDLE [--reason R] [--json]", runCancel},
	"output":    {"output HANDLE [--stream stdout|stderr] [--json]", runOutput},
	"mcp":       {"mcp [--workspace DIR] [--session S] [--goal G] [--launcher PATH]", runMCP},
}

// env is one invocation's parsed common flags and outputs.
type env struct {
	state          string
	json           bool
	stdout, stderr io.Writer
	fs             *flag.FlagSet
}

// usageError is a command line the command cannot understand.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// Main runs the broker command with args (without the program name) and
// returns its exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "broker: unknown command %q\n", args[0])
		printUsage(stderr)
		return exitUsage
	}
	e := &env{stdout: stdout, stderr: stderr, fs: flag.NewFlagSet(args[0], flag.ContinueOnError)}
	e.fs.SetOutput(stderr)
	e.fs.StringVar(&e.state, "state", "", "state directory (default $WARRANT_STATE, $XDG_STATE_HOME/warrant or ~/.local/state/warrant)")
	e.fs.BoolVar(&e.json, "json", false, "print data as JSON")
	err := cmd.run(e, args[1:])
	var ue usageError
	var we *wire.Error
	var status exitStatus
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "broker %s: %s\nusage: broker %s\n", args[0], ue.msg, cmd.usage)
		return exitUsage
	case errors.Is(err, flag.ErrHelp):
		return exitUsage
	case errors.As(err, &we):
		fmt.Fprintf(stderr, "broker %s: %s: %s\n", args[0], we.Code, we.Message)
		return exitFailed
	}
	fmt.Fprintf(stderr, "broker %s: %v\n", args[0], err)
	return exitFailed
}

func printUsage(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: broker COMMAND [--state DIR] [flags]")
	for _, n := range names {
		fmt.Fprintf(w, "  broker %s\n", commands[n].usage)
	}
}

// parse parses flags that may come before, between or after the
// positional arguments, and checks that there are exactly positional.
func (e *env) parse(args []string, positional int) ([]string, error) {
	return e.parseRange(args, positional, positional)
}

// parseRange is parse for a command that takes from least to most
// positional arguments.
func (e *env) parseRange(args []string, least, most int) ([]string, error) {
	var pos []string
	for {
		if err := e.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = e.fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if n := len(pos); n < least || n > most {
		want := least
		if n > most {
			want = most
		}
		return nil, usageError{fmt.Sprintf("want %d argument(s), got %d: %s", want, n, strings.Join(pos, " "))}
	}
	if e.state == "" {
		d, err := broker.DefaultStateDir()
		if err != nil {
			return nil, err
		}
		e.state = d
	}
	return pos, nil
}

// connectArgs parses args (see parse) and dials the daemon.
func (e *env) connectArgs(args []string, positional int) (*client.Client, []string, error) {
	pos, err := e.parse(args, positional)
	if err != nil {
		return nil, nil, err
	}
	cl, err := e.dial()
	return cl, pos, err
}

func (e *env) dial() (*client.Client, error) {
	cl, err := client.Dial(e.state)
	if err != nil {
		return nil, fmt.Errorf("no broker answers on %s (start one with `broker serve --state %s`): %w", e.state, e.state, err)
	}
	return cl, nil
}

func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
