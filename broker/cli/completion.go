package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// completion is one command's words: its subcommands (the alternatives
// of its first positional word in the command table, as in
// "list|show ID|verify") and its flags.
type completion struct {
	name  string
	subs  []string
	flags []string
}

// completions reads every command's words from the command table and the
// flags each command registers, so that the completion scripts never
// disagree with `broker help` and `broker CMD --help`: the bodies of
// local's commands among them (brokerd's).
func completions(local *Local) []completion {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]completion, 0, len(names))
	for _, n := range names {
		c := completion{name: n}
		rest := strings.TrimPrefix(commands[n].synopsis, n)
		words := strings.Fields(rest)
		if len(words) > 0 && strings.Contains(words[0], "|") && !strings.HasPrefix(words[0], "[") {
			// "list|show ID|export [--format F]|prune --older-than D":
			// each alternative's first word, where it is a word.
			for _, alt := range strings.Split(rest, "|") {
				if w := strings.Fields(alt); len(w) > 0 && strings.ToLower(w[0]) == w[0] && !strings.ContainsAny(w[0][:1], "-[") {
					c.subs = append(c.subs, w[0])
				}
			}
		}
		c.flags = flagsOf(local, n)
		for _, sub := range c.subs {
			for _, f := range flagsOf(local, n, sub) {
				if !slices.Contains(c.flags, f) {
					c.flags = append(c.flags, f)
				}
			}
		}
		sort.Strings(c.flags)
		out = append(out, c)
	}
	return out
}

// flagsOf is the flags `broker NAME ARGS...` registers, learnt by running
// it with --help and its output discarded: every command registers its
// flags and parses them before it does anything else, and --help stops
// it there.
func flagsOf(local *Local, name string, args ...string) []string {
	e := newEnv(name, commands[name], io.Discard, io.Discard)
	e.local = local
	run := commands[name].run
	if b := local.Commands[name]; b != nil {
		run = b
	}
	if err := run(e, append(args, "--help")); !errors.Is(err, errHelp) {
		panic(fmt.Sprintf("cli: internal error: broker %s --help did not stop at its help: %v", strings.Join(append([]string{name}, args...), " "), err))
	}
	var out []string
	e.Flags.VisitAll(func(f *flag.Flag) { out = append(out, "--"+f.Name) })
	return out
}

// runCompletion prints the completion script of one shell; it needs
// every command's flags, so the thin client hands it to brokerd.
func runCompletion(e *Env, args []string) error {
	if e.local == nil {
		return e.handOff()
	}
	pos, err := e.Parse(args, 1)
	if err != nil {
		return err
	}
	write, ok := map[string]func(io.Writer, []completion){"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}[pos[0]]
	if !ok {
		return UsageError{fmt.Sprintf("no completion for the shell %q; use bash, zsh or fish", pos[0])}
	}
	write(e.Stdout, completions(e.local))
	return nil
}

// bashCompletion completes the command, then its Subcommand, then its
// flags; after `--` in `broker run` it completes commands and files.
func bashCompletion(w io.Writer, cs []completion) {
	fmt.Fprintln(w, "# bash completion for broker (warrant): source <(broker completion bash)")
	fmt.Fprintln(w, "_broker() {")
	fmt.Fprintln(w, `	local cur=${COMP_WORDS[COMP_CWORD]} i`)
	fmt.Fprintln(w, `	for ((i = 1; i < COMP_CWORD; i++)); do`)
	fmt.Fprintln(w, `		if [[ ${COMP_WORDS[i]} == -- ]]; then COMPREPLY=($(compgen -c -f -- "$cur")); return; fi`)
	fmt.Fprintln(w, `	done`)
	fmt.Fprintln(w, `	if ((COMP_CWORD == 1)); then`)
	fmt.Fprintf(w, "\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\")); return\n", strings.Join(names(cs), " "))
	fmt.Fprintln(w, `	fi`)
	fmt.Fprintln(w, `	case ${COMP_WORDS[1]} in`)
	for _, c := range cs {
		words := c.flags
		fmt.Fprintf(w, "\t%s)\n", c.name)
		if len(c.subs) > 0 {
			fmt.Fprintf(w, "\t\tif ((COMP_CWORD == 2)); then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(c.subs, " "))
		}
		fmt.Fprintf(w, "\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", strings.Join(words, " "))
	}
	fmt.Fprintln(w, `	esac`)
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, "complete -F _broker broker")
}

// zshCompletion is the same words for zsh's completion system.
func zshCompletion(w io.Writer, cs []completion) {
	fmt.Fprintln(w, "#compdef broker")
	fmt.Fprintln(w, "# zsh completion for broker (warrant): broker completion zsh > \"${fpath[1]}/_broker\"")
	fmt.Fprintln(w, "_broker() {")
	fmt.Fprintln(w, `	if (( ${words[(I)--]} && ${words[(I)--]} < CURRENT )); then _normal; return; fi`)
	fmt.Fprintln(w, `	if (( CURRENT == 2 )); then`)
	fmt.Fprintf(w, "\t\tcompadd -- %s; return\n", strings.Join(names(cs), " "))
	fmt.Fprintln(w, `	fi`)
	fmt.Fprintln(w, `	case $words[2] in`)
	for _, c := range cs {
		fmt.Fprintf(w, "\t%s)\n", c.name)
		if len(c.subs) > 0 {
			fmt.Fprintf(w, "\t\tif (( CURRENT == 3 )); then compadd -- %s; return; fi\n", strings.Join(c.subs, " "))
		}
		fmt.Fprintf(w, "\t\tcompadd -- %s; _files ;;\n", strings.Join(c.flags, " "))
	}
	fmt.Fprintln(w, `	esac`)
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, `_broker "$@"`)
}

// fishCompletion declares each command, Subcommand and flag to fish.
func fishCompletion(w io.Writer, cs []completion) {
	fmt.Fprintln(w, "# fish completion for broker (warrant): broker completion fish > ~/.config/fish/completions/broker.fish")
	fmt.Fprintln(w, "complete -c broker -f")
	fmt.Fprintf(w, "complete -c broker -n __fish_use_subcommand -a %q\n", strings.Join(names(cs), " "))
	for _, c := range cs {
		seen := fmt.Sprintf("__fish_seen_subcommand_from %s", c.name)
		if len(c.subs) > 0 {
			fmt.Fprintf(w, "complete -c broker -n %q -a %q\n", seen, strings.Join(c.subs, " "))
		}
		for _, f := range c.flags {
			fmt.Fprintf(w, "complete -c broker -n %q -l %s\n", seen, strings.TrimPrefix(f, "--"))
		}
	}
}

func names(cs []completion) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// The completion command reads the command table, so it joins it at init.
func init() {
	commands["completion"] = command{"completion bash|zsh|fish", "Print the completion script of a shell: source <(broker completion bash).", runCompletion}
}
