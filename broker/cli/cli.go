package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"warrant/broker/client"
	"warrant/broker/view"
	"warrant/wire"
)

// Exit statuses.
const (
	exitOK           = 0
	ExitFailed       = 1
	exitUsage        = 2
	ExitVerifyFailed = 3 // `receipts verify`: the log was read and fails verification
)

// command is one entry of the command table: its synopsis (one short
// line, printed after "usage: broker" with every usage error), what
// --help says beyond the synopsis and the flags, and its body.
type command struct {
	synopsis string
	about    string // run's is runAbout, written when --help asks
	run      Body   // nil: brokerd's (Local.Commands)
}

var commands = map[string]command{
	"serve":      {"serve [--read-path DIR]... [--env NAME=VALUE]... [--cargo-target-cache] [--witness DIR] [--launcher PATH]", "Run the broker daemon in the foreground until SIGINT or SIGTERM.", nil},
	"probe":      {"probe [--launcher PATH] [--json]", "Prove the sandbox on this host and print every check with its evidence, by binding; beside a broker serving the state directory, show that broker's report.", nil},
	"approvals":  {"approvals [--full] [--all] [--watch] [--limit N] [--after CURSOR] [--json]", "List the pending approval requests as cards; --full adds the identity numbers, --all the requests decided or expired lately. --watch follows the queue: each new request appears as it arrives and, on a terminal, one key decides the first: y or Enter grants one use, a number and Enter that many, n denies (with a reason), s skips, c offers the program contract that covers it, q quits.", runApprovals},
	"approve":    {"approve ID [--uses N] [--ttl D] [--binding B] [--egress HOST:PORT,...|none] [--json]", "Grant a lease for approval request ID. D is a duration with a unit: 30s, 10m, 1h. --egress grants exactly the entries given (or none) instead of the network access the request asked for.", runApprove},
	"deny":       {"deny ID [--reason R] [--json]", "Deny approval request ID; nothing of it can be reused.", runDeny},
	"leases":     {"leases [--all] [--limit N] [--after CURSOR] [--json]", "List the usable leases with the command each allows, and say of one granted under another policy or environment that it will not match; --all adds the spent, expired and revoked ones.", runLeases},
	"revoke":     {"revoke LEASE [--json]", "End a lease now.", runRevoke},
	"actions":    {"actions [--unknown] [--limit N] [--after CURSOR] [--json]", "List actions, newest first: command, outcome, exit code, age.", runActions},
	"resolve":    {"resolve HANDLE success|failed|stop [--note N] [--json]", "Record what you know of an action whose outcome is unknown (it stays unknown in receipts).", runResolve},
	"receipts":   {"receipts list|show ID|verify|checkpoint|export|pubkey|prune [flags]", "Read, verify, checkpoint, export or prune the signed receipt log.", nil},
	"run":        {"run [flags] -- EXECUTABLE [ARG...]", "", runRun},
	"caches":     {"caches list|prune --older-than D|--all [--json]", "List or remove the per-workspace caches.", nil},
	"contracts":  {"contracts list|show NAME|offer REQUEST|enable NAME [--request REQUEST]|revoke ID [flags]", "List, show, offer, enable or revoke program contracts, each a typed grammar of one program's arguments (docs/contracts.md): one grant admits every argv it accepts.", nil},
	"toolchains": {"toolchains [PROGRAM...] [--limit N] [--after CURSOR] [--json]", "Say which toolchain (rustup, pyenv, nvm, a JDK, …) an action of each PROGRAM gets: its root, read-only, the variables it sets and why; without PROGRAM, for each toolchain at the known places.", nil},
	"status":     {"status [HANDLE] [--json]", "Show an action's state, or without HANDLE the host's capability report.", runStatus},
	"wait":       {"wait HANDLE [--timeout D] [--json]", "Wait for an action to end, at most D (a duration with a unit: 30s, 10m).", runWait},
	"cancel":     {"cancel HANDLE [--reason R] [--json]", "Ask the broker to end an action; nothing is undone.", runCancel},
	"output":     {"output HANDLE [--stream stdout|stderr] [--from OFFSET] [--json]", "Print an action's retained output (head and tail) from its verified receipt; with --from, one stream's bytes from OFFSET on, from the broker while it holds them.", nil},
	"goals":      {"goals create|show|verify|revise|pause|resume|cancel|attest|list [flags] [--json]; list: [--limit N] [--after CURSOR]", "Create, show, verify, revise, pause, resume, cancel, attest or list goals and their steps (docs/goals.md).", nil},
	"mcp":        {"mcp [--workspace DIR] [--session S] [--goal G] [--launcher PATH]", "Serve agents the MCP server on stdin and stdout.", nil},
}

// Subcommand is one entry of a command's own table (receipts, caches).
type Subcommand struct {
	Synopsis string
	Run      Body
}

// RunSub runs the Subcommand args[0] of table; from then on usage errors
// and --help speak of the Subcommand's synopsis.
func (e *Env) RunSub(table map[string]Subcommand, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 0 {
			return UsageError{"which " + e.name + " command?"}
		}
		e.printHelp()
		return errHelp
	}
	sub, ok := table[args[0]]
	if !ok {
		return UsageError{fmt.Sprintf("there is no %s command %q", e.name, args[0])}
	}
	e.cmd.synopsis = sub.Synopsis
	return sub.Run(e, args[1:])
}

// Env is one invocation's parsed common flags and outputs.
type Env struct {
	name           string   // the command's name
	cmd            command  // its entry, for its synopsis and help
	args           []string // the whole command line, for a hand-off to brokerd
	local          *Local   // brokerd's additions; nil in the thin client
	ends           bool     // the process ends with the command (Main)
	State          string   // --state
	JSON, Debug    bool     // --json, --debug
	full           bool     // the approval card with every identity number (approvals, run)
	Stdout, Stderr io.Writer
	Flags          *flag.FlagSet
}

// UsageError is a command line the command cannot understand.
type UsageError struct{ Msg string }

func (u UsageError) Error() string { return u.Msg }

// errHelp is what parse returns once it printed the command's help.
var errHelp = errors.New("help printed")

// Main runs the thin client, `broker`, with args (without the program
// name) and returns its exit status: a command its table gives no body,
// or one that needs what only brokerd has, is handed to brokerd
// (handoff.go). The process ends with the command: what the command
// holds till its end, such as a run's interrupt subscription, is left to
// the process's end.
func Main(args []string, stdout, stderr io.Writer) int { return run(args, stdout, stderr, nil, true) }

// Body is a command's body.
type Body func(e *Env, args []string) error

// Local is what brokerd adds to the thin client: the bodies of the
// commands that need the broker itself, read the state directory or
// link receipt, contract or goal code (serve, probe, mcp, receipts,
// output, caches, toolchains, goals, contracts), the embedded broker
// `run` opens when no daemon answers, and `status` without a handle.
type Local struct {
	Commands   map[string]Body
	Embed      func(ctx context.Context, e *Env, o BrokerOptions) (cl *client.Client, stop func(), err error)
	Capability func(e *Env) error
}

// Run runs the broker command with args; local is nil in the thin
// client, brokerd's additions in brokerd.
func Run(args []string, stdout, stderr io.Writer, local *Local) int {
	return run(args, stdout, stderr, local, false)
}

// run is Run; ends says the process ends with the command (Main).
func run(args []string, stdout, stderr io.Writer, local *Local, ends bool) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			if _, ok := commands[args[1]]; ok {
				return run([]string{args[1], "--help"}, stdout, stderr, local, ends)
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
	e.args, e.local, e.ends = args, local, ends
	body := cmd.run
	if local != nil && local.Commands[args[0]] != nil {
		body = local.Commands[args[0]]
	}
	var err error
	if body == nil {
		err = e.handOff()
	} else {
		err = body(e, args[1:])
	}
	var ue UsageError
	var status ExitStatus
	switch {
	case err == nil || errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &ue):
		e.printUsageError(ue)
		return exitUsage
	}
	fmt.Fprintf(stderr, "broker %s: %s\n", args[0], failureWords(err))
	e.printAccount(err)
	return ExitFailed
}

// systemWords is an uncoded error's message with the system calls its
// chain names said as what failed: a file's failure as its path and the
// reason ("open /x/caches: not a directory" as "/x/caches: not a
// directory"), a call's or a connection's as the reason alone. The steps
// the broker names ("list the caches: ") stay: they are its words.
func systemWords(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		var said string
		switch c := e.(type) {
		case *fs.PathError:
			said = c.Path + ": " + reason(c.Err)
		case *os.SyscallError:
			said = reason(c.Err)
		case *net.OpError:
			said = "the connection failed: " + reason(c.Err)
		default:
			continue
		}
		return strings.Replace(msg, e.Error(), said, 1)
	}
	return msg
}

// reason is the system's reason for a failed call: its errno's text, not
// the call.
func reason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// newEnv is an invocation of cmd with the common flags registered.
func newEnv(name string, cmd command, stdout, stderr io.Writer) *Env {
	e := &Env{name: name, cmd: cmd, Stdout: stdout, Stderr: stderr, Flags: flag.NewFlagSet(name, flag.ContinueOnError)}
	e.Flags.SetOutput(io.Discard) // parse prints help and usage errors itself
	e.Flags.Usage = func() {}
	e.Flags.StringVar(&e.State, "state", "", "the state `DIR` (default $WARRANT_STATE, $XDG_STATE_HOME/warrant or ~/.local/state/warrant)")
	e.Flags.BoolVar(&e.JSON, "json", false, "print data as JSON")
	e.Flags.BoolVar(&e.Debug, "debug", false, "also print the system's own account of a failure (the Go error chain)")
	return e
}

// printUsageError prints what is wrong with the command line and the
// command's one-line synopsis.
func (e *Env) printUsageError(ue UsageError) {
	fmt.Fprintf(e.Stderr, "broker %s: %s\nusage: broker %s   (broker %s --help)\n", e.name, ue.Msg, e.cmd.synopsis, e.name)
}

// printDetail prints a refusal's Detail, the system's own account, under
// --debug only; and an INTERNAL refusal's message, which is that account
// too (plainly says what is shown without --debug).
func (e *Env) printDetail(we *wire.Error) {
	if e.Debug && we.Code == wire.CodeInternal {
		fmt.Fprintf(e.Stderr, "  detail: %s\n", printable(we.Message))
	}
	if e.Debug && we.Detail != "" {
		fmt.Fprintf(e.Stderr, "  detail: %s\n", printable(we.Detail))
	}
}

// plainly is a refusal's sentence for a person: its message, but for an
// INTERNAL refusal, whose message is the system's own account of what
// failed (printDetail shows it under --debug). A message may name what
// the agent chose (a path, an argument): no rune of it that does not
// print reaches the terminal as is.
func plainly(code, message string) string {
	if code == wire.CodeInternal.String() {
		return "the broker failed internally (--debug prints its own account of it)"
	}
	return printable(message)
}

// printable is s with each rune that does not print as itself (a control,
// a bidi or other format rune, an invalid byte) written as its Go escape.
func printable(s string) string {
	if view.Plain(s) == s {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if _, n := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, "\\x%02x", s[i])
		} else if unicode.IsPrint(r) {
			b.WriteRune(r)
		} else {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// Serving refuses, while a broker serves the state directory, a command
// that needs the directory to itself; nil when none answers.
func (e *Env) Serving(what string) error {
	cl, err := client.Dial(e.State)
	if err != nil {
		return nil
	}
	cl.Close()
	return fmt.Errorf("a broker is serving %s, and %s needs the state directory to itself: stop that broker first (`broker status%s` shows it)",
		e.State, what, StateFlag(e.State))
}

// PrintCause prints err, the system's own account (a Go error chain) of
// a failure already said in plain words, under --debug only.
func (e *Env) PrintCause(err error) {
	if e.Debug && err != nil {
		fmt.Fprintf(e.Stderr, "  detail: %s\n", printable(err.Error()))
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
func (e *Env) printHelp() {
	about := e.cmd.about
	if e.name == "run" {
		about = runAbout() // not at init: it formats every profile's limits
	}
	fmt.Fprintf(e.Stdout, "usage: broker %s\n\n%s\n\nflags:\n", e.cmd.synopsis, about)
	e.Flags.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if kind != "" {
			name += " " + strings.ToUpper(kind)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(e.Stdout, "  %-24s %s\n", name, usage)
	})
}

// flagProblem says in the user's words what is wrong with a flag the flag
// package refused.
func (e *Env) flagProblem(err error) string {
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
		f := e.Flags.Lookup(name)
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

// Parse parses flags that may come before, between or after the
// positional arguments, and checks that there are exactly positional.
func (e *Env) Parse(args []string, positional int) ([]string, error) {
	return e.ParseRange(args, positional, positional)
}

// ParseRange is parse for a command that takes from least to most
// positional arguments. On -h or --help it prints the command's help and
// returns errHelp.
func (e *Env) ParseRange(args []string, least, most int) ([]string, error) {
	var pos []string
	for {
		if err := e.Flags.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				e.printHelp()
				return nil, errHelp
			}
			return nil, UsageError{e.flagProblem(err)}
		}
		args = e.Flags.Args()
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
		return nil, UsageError{"missing " + missing}
	} else if n > most {
		return nil, UsageError{fmt.Sprintf("unexpected argument %s", strconv.Quote(pos[most]))}
	}
	if e.State == "" {
		d, err := client.DefaultStateDir()
		if err != nil {
			return nil, err
		}
		e.State = d
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

// ConnectArgs parses args (Parse) and dials the daemon.
func (e *Env) ConnectArgs(args []string, positional int) (*client.Client, []string, error) {
	pos, err := e.Parse(args, positional)
	if err != nil {
		return nil, nil, err
	}
	cl, err := e.Dial()
	return cl, pos, err
}

func (e *Env) Dial() (*client.Client, error) {
	cl, err := client.Dial(e.State)
	if err != nil {
		return nil, dialError(e.State, err)
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
		"(or use `broker run`, which starts its own)", state, StateFlag(state))
}

// StateFlag is " --state DIR" for a command printed for another terminal,
// unless DIR is the built-in default (client.XDGStateDir), which needs
// none whatever that terminal's $WARRANT_STATE.
func StateFlag(state string) string {
	if d := client.XDGStateDir(); d != "" && filepath.Clean(d) == filepath.Clean(state) {
		return ""
	}
	return " --state " + state
}
