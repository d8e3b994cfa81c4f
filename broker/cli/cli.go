package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

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

// command is one entry of the command table: its synopsis (one short
// line, printed after "usage: broker" with every usage error), what
// --help says beyond the synopsis and the flags, and its body.
type command struct {
	synopsis string
	about    string
	run      func(e *env, args []string) error
}

var commands = map[string]command{
	"serve":      {"serve [--read-path DIR]... [--env NAME=VALUE]... [--cargo-target-cache] [--witness DIR] [--launcher PATH]", "Run the broker daemon in the foreground until SIGINT or SIGTERM.", runServe},
	"probe":      {"probe [--launcher PATH] [--json]", "Prove the sandbox on this host and print every check with its evidence.", runProbe},
	"approvals":  {"approvals [--full] [--limit N] [--after CURSOR] [--json]", "List the pending approval requests as cards; --full adds the identity numbers.", runApprovals},
	"approve":    {"approve ID [--uses N] [--ttl D] [--binding B] [--json]", "Grant a lease for approval request ID. D is a duration with a unit: 30s, 10m, 1h.", runApprove},
	"deny":       {"deny ID [--reason R] [--json]", "Deny approval request ID; nothing of it can be reused.", runDeny},
	"leases":     {"leases [--all] [--limit N] [--after CURSOR] [--json]", "List the usable leases with the command each allows; --all adds the spent, expired and revoked ones.", runLeases},
	"revoke":     {"revoke LEASE [--json]", "End a lease now.", runRevoke},
	"actions":    {"actions [--unknown] [--limit N] [--after CURSOR] [--json]", "List actions, newest first: command, outcome, exit code, age.", runActions},
	"resolve":    {"resolve HANDLE success|failed|stop [--note N] [--json]", "Record what you know of an action whose outcome is unknown (it stays unknown in receipts).", runResolve},
	"receipts":   {"receipts list|show ID|verify|checkpoint|export|pubkey|prune [flags]", "Read, verify, checkpoint, export or prune the signed receipt log.", runReceipts},
	"run":        {"run [flags] -- EXECUTABLE [ARG...]", runAbout, runRun},
	"caches":     {"caches list|prune --older-than D|--all [--json]", "List or remove the per-workspace caches.", runCaches},
	"contracts":  {"contracts list|show NAME|enable NAME|revoke ID [flags]", "List, show, enable or revoke program contracts, each a typed grammar of one program's arguments (docs/contracts.md): one grant admits every argv it accepts.", runContracts},
	"toolchains": {"toolchains [PROGRAM...] [--limit N] [--after CURSOR] [--json]", "Say which toolchain (rustup, pyenv, nvm, a JDK, …) an action of each PROGRAM gets: its root, read-only, the variables it sets and why; without PROGRAM, for each toolchain at the known places.", runToolchains},
	"status":     {"status [HANDLE] [--json]", "Show an action's state, or without HANDLE the host's capability report.", runStatus},
	"wait":       {"wait HANDLE [--timeout D] [--json]", "Wait for an action to end, at most D (a duration with a unit: 30s, 10m).", runWait},
	"cancel":     {"cancel HANDLE [--reason R] [--json]", "Ask the broker to end an action; nothing is undone.", runCancel},
	"output":     {"output HANDLE [--stream stdout|stderr] [--from OFFSET] [--json]", "Print an action's retained output (head and tail) from its verified receipt; with --from, one stream's bytes from OFFSET on, from the broker while it holds them.", runOutput},
	"goals":      {"goals create|show|verify|revise|pause|resume|cancel|attest|list [flags] [--json]; list: [--limit N] [--after CURSOR]", "Create, show, verify, revise, pause, resume, cancel, attest or list goals and their steps (docs/goals.md).", runGoals},
	"mcp":        {"mcp [--workspace DIR] [--session S] [--goal G] [--launcher PATH]", "Serve agents the MCP server on stdin and stdout.", runMCP},
}

// subcommand is one entry of a command's own table (receipts, caches).
type subcommand struct {
	synopsis string
	run      func(e *env, args []string) error
}

// runSub runs the subcommand args[0] of table; from then on usage errors
// and --help speak of the subcommand's synopsis.
func (e *env) runSub(table map[string]subcommand, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 0 {
			return usageError{"which " + e.name + " command?"}
		}
		e.printHelp()
		return errHelp
	}
	sub, ok := table[args[0]]
	if !ok {
		return usageError{fmt.Sprintf("there is no %s command %q", e.name, args[0])}
	}
	e.cmd.synopsis = sub.synopsis
	return sub.run(e, args[1:])
}

// env is one invocation's parsed common flags and outputs.
type env struct {
	name           string  // the command's name
	cmd            command // its entry, for its synopsis and help
	state          string
	json, debug    bool
	full           bool // the approval card with every identity number (approvals, run)
	stdout, stderr io.Writer
	fs             *flag.FlagSet
}

// usageError is a command line the command cannot understand.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// errHelp is what parse returns once it printed the command's help.
var errHelp = errors.New("help printed")

// Main runs the broker command with args (without the program name) and
// returns its exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			if _, ok := commands[args[1]]; ok {
				return Main([]string{args[1], "--help"}, stdout, stderr)
			}
		}
		printUsage(stdout)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "broker: unknown command %q; `broker help` lists them\n", args[0])
		return exitUsage
	}
	e := newEnv(args[0], cmd, stdout, stderr)
	err := cmd.run(e, args[1:])
	var ue usageError
	var we *wire.Error
	var status exitStatus
	switch {
	case err == nil || errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &ue):
		e.printUsageError(ue)
		return exitUsage
	case errors.As(err, &we):
		fmt.Fprintf(stderr, "broker %s: %s: %s\n", args[0], we.Code, we.Message)
		e.printDetail(we)
		return exitFailed
	}
	fmt.Fprintf(stderr, "broker %s: %v\n", args[0], err)
	return exitFailed
}

// newEnv is an invocation of cmd with the common flags registered.
func newEnv(name string, cmd command, stdout, stderr io.Writer) *env {
	e := &env{name: name, cmd: cmd, stdout: stdout, stderr: stderr, fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	e.fs.SetOutput(io.Discard) // parse prints help and usage errors itself
	e.fs.Usage = func() {}
	e.fs.StringVar(&e.state, "state", "", "the state `DIR` (default $WARRANT_STATE, $XDG_STATE_HOME/warrant or ~/.local/state/warrant)")
	e.fs.BoolVar(&e.json, "json", false, "print data as JSON")
	e.fs.BoolVar(&e.debug, "debug", false, "also print the system's own account of a failure (the Go error chain)")
	return e
}

// printUsageError prints what is wrong with the command line and the
// command's one-line synopsis.
func (e *env) printUsageError(ue usageError) {
	fmt.Fprintf(e.stderr, "broker %s: %s\nusage: broker %s   (broker %s --help)\n", e.name, ue.msg, e.cmd.synopsis, e.name)
}

// printDetail prints a refusal's Detail, the system's own account, under
// --debug only.
func (e *env) printDetail(we *wire.Error) {
	if e.debug && we.Detail != "" {
		fmt.Fprintf(e.stderr, "  detail: %s\n", we.Detail)
	}
}

func printUsage(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: broker COMMAND [--state DIR] [--debug] [flags]   (broker COMMAND --help for its flags)")
	for _, n := range names {
		fmt.Fprintf(w, "  broker %s\n", commands[n].synopsis)
	}
}

// printHelp prints the command's synopsis, what it does and its flags.
func (e *env) printHelp() {
	fmt.Fprintf(e.stdout, "usage: broker %s\n\n%s\n\nflags:\n", e.cmd.synopsis, e.cmd.about)
	e.fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if kind != "" {
			name += " " + strings.ToUpper(kind)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(e.stdout, "  %-24s %s\n", name, usage)
	})
}

// flagProblem says in the user's words what is wrong with a flag the flag
// package refused.
func (e *env) flagProblem(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Sprintf("there is no flag --%s", strings.TrimLeft(name, "-"))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s needs a value", strings.TrimLeft(name, "-"))
	}
	var value, name string
	if n, _ := fmt.Sscanf(msg, "invalid value %q for flag -%s", &value, &name); n == 2 {
		name = strings.TrimSuffix(name, ":")
		f := e.fs.Lookup(name)
		if g, ok := f.Value.(flag.Getter); f != nil && ok {
			switch g.Get().(type) {
			case time.Duration:
				return fmt.Sprintf("--%s %s: give a duration with its unit, like 30s, 10m or 1h", name, value)
			case uint, uint64, int, int64:
				return fmt.Sprintf("--%s %s: give a whole number", name, value)
			case bool:
				return fmt.Sprintf("--%s=%s: give true or false, or leave the value out", name, value)
			}
		}
		return fmt.Sprintf("--%s %s: not a valid value", name, value)
	}
	return msg
}

// parse parses flags that may come before, between or after the
// positional arguments, and checks that there are exactly positional.
func (e *env) parse(args []string, positional int) ([]string, error) {
	return e.parseRange(args, positional, positional)
}

// parseRange is parse for a command that takes from least to most
// positional arguments. On -h or --help it prints the command's help and
// returns errHelp.
func (e *env) parseRange(args []string, least, most int) ([]string, error) {
	var pos []string
	for {
		if err := e.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				e.printHelp()
				return nil, errHelp
			}
			return nil, usageError{e.flagProblem(err)}
		}
		args = e.fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if n := len(pos); n < least {
		missing := "an argument"
		if names := positionals(e.cmd.synopsis); len(names) >= least {
			missing = strings.Join(names[n:least], " and ")
		}
		return nil, usageError{"missing " + missing}
	} else if n > most {
		return nil, usageError{fmt.Sprintf("unexpected argument %s", strconv.Quote(pos[most]))}
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

// positionals are the names of the positional arguments in a synopsis:
// the words after the command that are neither flags nor flag values,
// optional ones without their brackets.
func positionals(synopsis string) []string {
	var names []string
	words := strings.Fields(synopsis)[1:]
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(w, "["), "-") {
			if next := i + 1; !strings.HasSuffix(w, "]") && next < len(words) && !strings.HasPrefix(strings.TrimLeft(words[next], "["), "-") {
				i = next // the flag's value
			}
			continue
		}
		if w = strings.Trim(w, "[]."); w == strings.ToUpper(w) || strings.Contains(w, "|") {
			names = append(names, w)
		}
	}
	return names
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
		return nil, dialError(e.state, err)
	}
	return cl, nil
}

// dialError says why no broker answers on the state directory, and what
// to do.
func dialError(state string, err error) *wire.Error {
	if errors.Is(err, fs.ErrPermission) {
		return wire.Explain(wire.CodeIOFailed, err, "the broker's sockets in %s are not yours to use (permission denied); "+
			"run this as the user who started the broker", state)
	}
	return wire.Explain(wire.CodeIOFailed, err, "no broker is running on the state directory %s; start one with `broker serve%s` "+
		"(or use `broker run`, which starts its own)", state, stateFlag(state))
}

// stateFlag is " --state DIR" for a command printed for another terminal,
// unless DIR is the built-in default (client.XDGStateDir), which needs
// none whatever that terminal's $WARRANT_STATE.
func stateFlag(state string) string {
	if d := client.XDGStateDir(); d != "" && filepath.Clean(d) == filepath.Clean(state) {
		return ""
	}
	return " --state " + state
}
